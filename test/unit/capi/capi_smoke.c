/* The C API from a C translation unit: it must compile as C11 and report a
 * missing plan as DSC_NOT_FOUND with a message naming the file, and reject
 * null arguments without crashing. Exit 0 on success. */
#include "dsc/dsc.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  dsc_engine *engine = NULL;
  dsc_status status = dsc_engine_load("/nonexistent/model.dscp", "/nonexistent", "cpu", &engine);
  if (status != DSC_NOT_FOUND || engine != NULL) {
    fprintf(stderr, "expected DSC_NOT_FOUND, got %d\n", (int)status);
    return 1;
  }
  if (strstr(dsc_last_error(), "/nonexistent/model.dscp") == NULL) {
    fprintf(stderr, "message does not name the plan: %s\n", dsc_last_error());
    return 1;
  }
  if (dsc_engine_load(NULL, NULL, NULL, &engine) != DSC_INVALID_ARGUMENT) {
    fprintf(stderr, "null arguments were not rejected\n");
    return 1;
  }
  if (dsc_session_create(NULL, NULL) != DSC_INVALID_ARGUMENT)
    return 1;
  {
    dsc_scheduler *scheduler = NULL;
    uint64_t id = 0;
    int32_t one = 1;
    dsc_request_state state = DSC_REQUEST_QUEUED;
    size_t count = 0;
    if (dsc_scheduler_create(NULL, 0, 0, &scheduler) != DSC_INVALID_ARGUMENT ||
        dsc_scheduler_submit(NULL, &one, 1, 1, &id) != DSC_INVALID_ARGUMENT ||
        dsc_scheduler_step(NULL, NULL, NULL) != DSC_INVALID_ARGUMENT ||
        dsc_scheduler_result(NULL, 1, &state, NULL, 0, &count) != DSC_INVALID_ARGUMENT ||
        dsc_scheduler_cancel(NULL, 1) != DSC_INVALID_ARGUMENT ||
        dsc_scheduler_release(NULL, 1) != DSC_INVALID_ARGUMENT ||
        strstr(dsc_last_error(), "dsc_scheduler_release") == NULL) {
      fprintf(stderr, "a null scheduler was not rejected\n");
      return 1;
    }
    dsc_scheduler_destroy(NULL);
  }
  size_t rows = 0;
  float logits[4];
  int32_t ids[2] = {1, 2};
  if (dsc_session_extend(NULL, ids, 2, logits, 4, &rows) != DSC_INVALID_ARGUMENT ||
      strstr(dsc_last_error(), "dsc_session_extend") == NULL) {
    fprintf(stderr, "extend without a session was not rejected: %s\n", dsc_last_error());
    return 1;
  }
  printf("C API ok: %s\n", dsc_last_error());
  return 0;
}
