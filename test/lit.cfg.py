# lit configuration for dsc: .mlir files run through dsc-opt, .test files
# through dsc-compile. %shared is the shared folder (DSC_SHARED_DIR or
# <repository>/../shared), %models the repository's released configs,
# %tiny6_cpu_plan the tiny6 CPU plan compiled at build time (test/CMakeLists.txt;
# tests that read it say REQUIRES: tiny6-cpu-plan).
import os
import lit.formats
from lit.llvm import llvm_config

config.name = "DSC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "unit", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dsc_obj_root, "test")

llvm_config.with_system_environment(["HOME", "TMP", "TEMP", "DSC_SHARED_DIR"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["dsc-opt", "dsc-compile", "dsc-run", "dsc-bench", "dsc-kernel-bench"], [os.path.join(config.dsc_obj_root, "bin")])

shared = os.environ.get("DSC_SHARED_DIR") or config.dsc_shared_dir_default
config.substitutions.append(("%shared", os.path.abspath(shared)))
config.substitutions.append(("%models", os.path.join(config.dsc_src_root, "models")))
config.substitutions.append(("%dsc_src", config.dsc_src_root))
if config.dsc_tiny6_cpu_plan:
    config.available_features.add("tiny6-cpu-plan")
    config.substitutions.append(("%tiny6_cpu_plan", config.dsc_tiny6_cpu_plan))
# Python with numpy for golden comparisons: Debian's python3-numpy (setup.sh).
config.substitutions.append(("%python", "/usr/bin/python3"))
