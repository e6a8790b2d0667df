//===- LowerToPlan.cpp - ds module -> runtime Plan --------------------===//
#include "passes/LowerToPlan.h"
#include "passes/KvRecordSizes.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "dsc/numerics/KvLayout.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"

#include <map>

using namespace mlir;
using namespace dsc;
using namespace dsc::ds;
namespace rt = dsc::runtime;
namespace abi = dsc::abi;

namespace {

int64_t lastDimOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getShape().back(); }

std::optional<rt::DType> dtypeOf(Type element) {
  if (element.isBF16()) return rt::DType::BF16;
  if (element.isF16()) return rt::DType::F16;
  if (element.isF32()) return rt::DType::F32;
  if (element.isF64()) return rt::DType::F64;
  if (llvm::isa<Float8E4M3FNType>(element)) return rt::DType::F8_E4M3;
  if (llvm::isa<Float8E8M0FNUType>(element)) return rt::DType::F8_E8M0;
  if (element.isInteger(8)) return rt::DType::I8;
  if (element.isInteger(16)) return rt::DType::I16;
  if (element.isInteger(32)) return rt::DType::I32;
  if (element.isInteger(64)) return rt::DType::I64;
  if (element.isInteger(1)) return rt::DType::Bool;
  return std::nullopt;
}

rt::RecordLayout layoutOf(const numerics::KvRecordFormat &f) {
  rt::RecordLayout l;
  l.valuesPerEntry = f.valuesPerEntry;
  l.valuesPerTile = f.valuesPerTile;
  l.valueType = uint8_t(f.valueType);
  l.scaleType = uint8_t(f.scaleType);
  l.dataBytes = f.dataBytes;
  l.scaleBytes = f.scaleBytes;
  l.entryBytes = f.entryBytes;
  l.tokensPerPage = 64;
  l.pageOrder = uint8_t(numerics::KvPageOrder::TokenInterleaved);
  return l;
}

/// #ds.rope as the kernel ABI's Rope (absent YaRN fields keep the ABI's
/// defaults, which are the values the kernels use without YaRN).
abi::Rope lowerRope(RopeAttr rope) {
  abi::Rope r;
  r.dim = rope.getDim();
  r.theta = rope.getTheta().getValueAsDouble();
  r.original_seq_len = rope.getOriginalSeqLen();
  if (rope.getFactor()) r.factor = rope.getFactor().getValueAsDouble();
  if (rope.getBetaFast()) r.beta_fast = rope.getBetaFast().getValueAsDouble();
  if (rope.getBetaSlow()) r.beta_slow = rope.getBetaSlow().getValueAsDouble();
  return r;
}

// lowerKernelParams(Operation *, constants): the typed parameters of every
// kernel op, generated from the ODS (dsc-tblgen -gen-kernel-abi-lowering).
#include "abi/KernelParamsLowering.inc"

bool sameKernel(const rt::KernelSpec &a, const rt::KernelSpec &b) {
  return a.name == b.name && a.params == b.params && a.constants == b.constants;
}

class PlanLowering {
public:
  PlanLowering(rt::Plan &plan, std::string &error) : plan_(plan), error_(error) {}

  bool lowerFunction(func::FuncOp fn);

private:
  int64_t tensorIndex(ParameterOp param);
  int64_t stateIndex(const std::string &name, rt::StateKind kind, int64_t layer, int64_t ratio,
                     int64_t capacity, const numerics::KvRecordFormat *format);
  int64_t kernelIndex(rt::KernelSpec spec);
  std::optional<int64_t> slotFor(Value value, int64_t layer);
  int64_t addSlot(rt::ValueSlot slot) {
    program_->values.push_back(std::move(slot));
    return int64_t(program_->values.size()) - 1;
  }
  bool fail(Operation *op, const std::string &message) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << op->getName() << ": " << message;
    error_ = os.str();
    return false;
  }
  bool lowerOp(Operation *op, int64_t layer);
  bool lowerLayer(LayerOp layer);
  bool lowerFused(FusedOp fused, int64_t layer);

  rt::Plan &plan_;
  std::string &error_;
  rt::Program *program_ = nullptr;
  llvm::DenseMap<Value, int64_t> slots_;
  /// A !ds.window value's second slot: the window rows attention reads.
  llvm::DenseMap<Value, int64_t> windowRows_;
  llvm::StringMap<int64_t> tensors_;
  std::map<std::string, int64_t> states_;
  /// From ds.replay_slice on (CED prefill): launches are replayed
  /// (Launch::replay) and their token dims are kReplayTokens.
  bool replay_ = false;
  /// The Program::fusions entry launches join while a ds.fused is lowered.
  int64_t fusion_ = -1;
};

int64_t PlanLowering::tensorIndex(ParameterOp param) {
  auto it = tensors_.find(param.getSymName());
  if (it != tensors_.end())
    return it->second;
  auto type = llvm::cast<RankedTensorType>(param.getType());
  rt::TensorBinding binding;
  binding.name = param.getSymName().str();
  binding.dtype = *dtypeOf(type.getElementType());
  binding.shape.assign(type.getShape().begin(), type.getShape().end());
  switch (param.getKind()) {
  case ParameterKind::weight: binding.kind = rt::TensorKind::Weight; break;
  case ParameterKind::scale: binding.kind = rt::TensorKind::Scale; break;
  case ParameterKind::fp4_packed: binding.kind = rt::TensorKind::Fp4Packed; break;
  }
  if (binding.name.find("{e}") != std::string::npos)
    binding.experts = binding.shape.front();
  // Released checkpoints hold wo_a as FP8 + scale; the reference converts it.
  if (llvm::StringRef(binding.name).ends_with(".attn.wo_a.weight"))
    binding.alternativeDType = rt::DType::F8_E4M3;
  plan_.tensors.push_back(std::move(binding));
  int64_t index = int64_t(plan_.tensors.size()) - 1;
  tensors_[param.getSymName()] = index;
  return index;
}

int64_t PlanLowering::stateIndex(const std::string &name, rt::StateKind kind, int64_t layer,
                                 int64_t ratio, int64_t capacity,
                                 const numerics::KvRecordFormat *format) {
  auto it = states_.find(name);
  if (it != states_.end())
    return it->second;
  rt::StateBuffer state;
  state.name = name;
  state.kind = kind;
  state.layer = layer;
  state.ratio = ratio;
  state.capacity = capacity;
  if (format)
    state.layout = layoutOf(*format);
  plan_.states.push_back(std::move(state));
  return states_[name] = int64_t(plan_.states.size()) - 1;
}

int64_t PlanLowering::kernelIndex(rt::KernelSpec spec) {
  for (size_t i = 0; i < plan_.kernels.size(); ++i)
    if (sameKernel(plan_.kernels[i], spec))
      return int64_t(i);
  plan_.kernels.push_back(std::move(spec));
  return int64_t(plan_.kernels.size()) - 1;
}

/// The slot of an operand. Values of enclosing layers and of earlier layers
/// were mapped when their producer was lowered.
std::optional<int64_t> PlanLowering::slotFor(Value value, int64_t) {
  auto it = slots_.find(value);
  if (it == slots_.end())
    return std::nullopt;
  return it->second;
}

bool PlanLowering::lowerLayer(LayerOp layer) {
  int64_t id = layer.getId();
  for (Operation &op : layer.getBody().front()) {
    if (auto yield = llvm::dyn_cast<YieldOp>(op)) {
      for (auto [result, yielded] : llvm::zip(layer.getResults(), yield.getValues()))
        slots_[result] = slots_.at(yielded);
      continue;
    }
    if (auto fused = llvm::dyn_cast<FusedOp>(op)) {
      if (!lowerFused(fused, id))
        return false;
      continue;
    }
    if (!lowerOp(&op, id))
      return false;
  }
  if (layer.getNumResults() >= 2 && layer.getMode() != LayerMode::dspark &&
      !layer.getCedProjection()) {
    rt::LayerBoundary boundary;
    boundary.layer = id;
    boundary.stream = slots_.at(layer.getResult(0));
    boundary.mix = slots_.at(layer.getResult(1));
    boundary.afterLaunch = int64_t(program_->launches.size()) - 1;
    program_->boundaries.push_back(boundary);
    program_->values[boundary.stream].name = "layers." + std::to_string(id) + ".out";
    program_->values[boundary.mix].name = "layers." + std::to_string(id) + ".pre_mix";
  }
  return true;
}

/// The body's ops become consecutive launches of one Program::fusions entry.
bool PlanLowering::lowerFused(FusedOp fused, int64_t layer) {
  rt::Fusion fusion;
  fusion.kernel = fused.getKernel().str();
  fusion.layer = layer;
  fusion.tileRows = int64_t(fused.getTileRows());
  fusion.executable = fused.getExecutable().value_or("").str();
  program_->fusions.push_back(std::move(fusion));
  fusion_ = int64_t(program_->fusions.size()) - 1;
  for (Operation &op : fused.getBody().front()) {
    if (auto yield = llvm::dyn_cast<FusedYieldOp>(op)) {
      // The values the body computes but does not yield are internal.
      llvm::SmallPtrSet<Value, 8> yielded(yield.getValues().begin(), yield.getValues().end());
      for (Operation &inner : fused.getBody().front().without_terminator())
        for (Value result : inner.getResults()) {
          if (yielded.contains(result))
            continue;
          if (auto it = slots_.find(result); it != slots_.end() &&
                                             program_->values[size_t(it->second)].kind ==
                                                 rt::ValueKind::Activation)
            program_->fusions.back().internal.push_back(it->second);
        }
      for (auto [result, yielded] : llvm::zip(fused.getResults(), yield.getValues())) {
        slots_[result] = slots_.at(yielded);
        if (auto it = windowRows_.find(yielded); it != windowRows_.end())
          windowRows_[result] = it->second;
      }
      continue;
    }
    if (!lowerOp(&op, layer)) {
      fusion_ = -1;
      return false;
    }
  }
  fusion_ = -1;
  return true;
}

bool PlanLowering::lowerOp(Operation *op, int64_t layer) {
  const int64_t maxSeqLen = plan_.model.maxSeqLen;
  if (auto weight = llvm::dyn_cast<WeightOp>(op)) {
    auto param = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(op, weight.getParameterAttr());
    rt::ValueSlot slot;
    slot.kind = rt::ValueKind::Weight;
    slot.tensor = tensorIndex(param);
    slot.dtype = plan_.tensors[slot.tensor].dtype;
    slot.shape = plan_.tensors[slot.tensor].shape;
    slot.name = plan_.tensors[slot.tensor].name;
    slots_[weight.getResult()] = addSlot(std::move(slot));
    return true;
  }
  if (auto nested = llvm::dyn_cast<LayerOp>(op))
    return lowerLayer(nested);

  if (auto slice = llvm::dyn_cast<ReplaySliceOp>(op)) {
    replay_ = true;
    plan_.model.cedReplayTokens = int64_t(slice.getTokens());
  }
  const int64_t tokens = replay_ ? rt::kReplayTokens : rt::kTokens;
  rt::Launch launch;
  launch.layer = layer;
  launch.replay = replay_;
  launch.fusion = fusion_;
  rt::KernelSpec spec;
  spec.name = op->getName().stripDialect().str();
  std::optional<abi::KernelParams> params = lowerKernelParams(op, spec.constants);
  if (!params)
    return fail(op, "is not a kernel (no entry in the kernel ABI)");
  spec.params = std::move(*params);

  for (Value operand : op->getOperands()) {
    std::optional<int64_t> slot = slotFor(operand, layer);
    if (!slot)
      return fail(op, "operand has no producer in this function");
    launch.inputs.push_back(*slot);
  }
  // Readers of a window also get its rows (appended after the operands).
  for (Value operand : op->getOperands())
    if (auto it = windowRows_.find(operand); it != windowRows_.end())
      launch.inputs.push_back(it->second);
  std::string prefix = layer >= 0 ? "layers." + std::to_string(layer) + "." : "";

  // Hidden state of stateful ops: read and written by the same launch.
  auto hiddenState = [&](const std::string &name, rt::StateKind kind, int64_t ratio,
                         int64_t capacity, rt::DType dtype, std::vector<int64_t> shape) {
    rt::ValueSlot slot;
    slot.kind = rt::ValueKind::State;
    slot.state = stateIndex(name, kind, layer, ratio, capacity, nullptr);
    slot.dtype = dtype;
    slot.shape = std::move(shape);
    slot.name = name;
    int64_t index = addSlot(std::move(slot));
    launch.inputs.push_back(index);
    launch.outputs.push_back(index);
  };
  if (auto compressor = llvm::dyn_cast<CompressorOp>(op)) {
    int64_t ratio = compressor.getRatio(), dim = lastDimOf(compressor.getLatent());
    hiddenState(prefix + "compressor_state", rt::StateKind::CompressorState, ratio, 1,
                rt::DType::F32, {2, ratio, dim});
    plan_.states[program_->values.back().state].dim = dim; // the compressor's head dim
  }
  if (auto hash = llvm::dyn_cast<EngramHashOp>(op))
    hiddenState("engram_history", rt::StateKind::EngramHistory, 0, maxSeqLen, rt::DType::I64,
                {maxSeqLen});

  for (Value result : op->getResults()) {
    rt::ValueSlot slot;
    Type type = result.getType();
    if (auto window = llvm::dyn_cast<WindowType>(type)) {
      numerics::KvRecordFormat format = numerics::swaKvFormat(int32_t(window.getDim()));
      bool dspark = layer >= plan_.model.nLayers;
      slot.kind = rt::ValueKind::State;
      slot.state = stateIndex(prefix + "window", dspark ? rt::StateKind::DSparkRing
                                                        : rt::StateKind::WindowRing,
                              layer, 0, window.getSize(), &format);
      slot.dtype = rt::DType::U8;
      slot.shape = {window.getSize(), format.entryBytes};
    } else if (auto kv = llvm::dyn_cast<KvCacheType>(type)) {
      numerics::KvRecordFormat format = numerics::mainKvFormat(int32_t(kv.getDim()));
      slot.kind = rt::ValueKind::State;
      slot.state = stateIndex(prefix + "main_kv", rt::StateKind::MainKv, layer, kv.getRatio(),
                              maxSeqLen / kv.getRatio(), &format);
      slot.dtype = rt::DType::U8;
      slot.shape = {rt::kCompressedLength, format.entryBytes};
      slot.ratio = kv.getRatio();
    } else if (auto keys = llvm::dyn_cast<IndexKeysType>(type)) {
      numerics::KvRecordFormat format = numerics::indexKeyFormat(int32_t(keys.getDim()));
      slot.kind = rt::ValueKind::State;
      slot.state = stateIndex(prefix + "index_keys", rt::StateKind::IndexKeys, layer,
                              keys.getRatio(), maxSeqLen / keys.getRatio(), &format);
      slot.dtype = rt::DType::U8;
      slot.shape = {rt::kCompressedLength, format.entryBytes};
      slot.ratio = keys.getRatio();
    } else if (auto topk = llvm::dyn_cast<TopKType>(type)) {
      slot.dtype = rt::DType::I32;
      slot.shape = {tokens, topk.getK()};
      slot.ratio = topk.getRatio();
    } else if (auto candidates = llvm::dyn_cast<CandidatesType>(type)) {
      // The picked block ids of each row, ascending, -1 padded (not a
      // [tokens, T] mask: numerics/SparseSelect.h).
      slot.dtype = rt::DType::I32;
      slot.shape = {tokens, candidates.getBlocks()};
      slot.ratio = candidates.getRatio();
    } else if (auto tensor = llvm::dyn_cast<RankedTensorType>(type)) {
      std::optional<rt::DType> dtype = dtypeOf(tensor.getElementType());
      if (!dtype)
        return fail(op, "unsupported element type");
      slot.dtype = *dtype;
      slot.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
      for (int64_t &d : slot.shape)
        if (ShapedType::isDynamic(d))
          d = tokens;
      // Latents and scores are sized by compressed entries, not tokens.
      if (auto c = llvm::dyn_cast<CompressorOp>(op)) {
        slot.shape[0] = rt::kCompressedTokens;
        slot.ratio = c.getRatio();
      }
      if (auto score = llvm::dyn_cast<IndexerScoreOp>(op)) {
        slot.shape[1] = rt::kCompressedLength;
        slot.ratio = score.getKeys().getType().getRatio();
      }
    } else {
      return fail(op, "unsupported result type");
    }
    if (slot.name.empty())
      slot.name = prefix + spec.name;
    if (slot.kind == rt::ValueKind::Activation && slot.name.empty())
      slot.name = spec.name;
    int64_t index = addSlot(std::move(slot));
    slots_[result] = index;
    launch.outputs.push_back(index);
    if (auto window = llvm::dyn_cast<WindowType>(type)) {
      // The QDQ rows attention reads: the chunk in prefill, the ring in decode
      // (a replayed chunk: its own R' rows).
      rt::ValueSlot rows;
      rows.dtype = rt::DType::F32;
      rows.shape = {replay_ ? rt::kReplayTokens : rt::kWindowRows, window.getDim()};
      rows.ratio = window.getSize();
      rows.name = prefix + "window_rows";
      int64_t rowsIndex = addSlot(std::move(rows));
      windowRows_[result] = rowsIndex;
      launch.outputs.push_back(rowsIndex);
    }
  }
  launch.kernel = kernelIndex(std::move(spec));
  program_->launches.push_back(std::move(launch));
  return true;
}

bool PlanLowering::lowerFunction(func::FuncOp fn) {
  plan_.programs.emplace_back();
  program_ = &plan_.programs.back();
  program_->name = fn.getSymName().str();
  slots_.clear();
  windowRows_.clear();
  replay_ = false;
  for (BlockArgument arg : fn.getArguments()) {
    auto type = llvm::cast<RankedTensorType>(arg.getType());
    rt::ValueSlot slot;
    slot.kind = rt::ValueKind::Input;
    slot.dtype = *dtypeOf(type.getElementType());
    slot.shape.assign(type.getShape().begin(), type.getShape().end());
    for (int64_t &d : slot.shape)
      if (ShapedType::isDynamic(d))
        d = rt::kTokens;
    slot.name = "input" + std::to_string(arg.getArgNumber());
    int64_t index = addSlot(std::move(slot));
    slots_[arg] = index;
    program_->inputs.push_back(index);
  }
  for (Operation &op : fn.getBody().front()) {
    if (auto ret = llvm::dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands())
        program_->outputs.push_back(slots_.at(v));
      continue;
    }
    if (!lowerOp(&op, -1))
      return false;
  }
  return true;
}

} // namespace


bool dsc::ds::lowerModuleToPlan(ModuleOp module, const rt::PlanFacts &facts,
                                rt::Plan &plan, std::string &error) {
  plan = rt::Plan();
  plan.model = facts;
  PlanLowering lowering(plan, error);
  for (auto fn : module.getOps<func::FuncOp>()) {
    // DSpark programs join the plan with their CPU kernels (not yet).
    if (fn.getSymName().starts_with("dspark"))
      continue;
    if (!lowering.lowerFunction(fn))
      return false;
  }
  return true;
}
