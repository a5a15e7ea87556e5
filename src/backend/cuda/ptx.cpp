// PTX for NVIDIA GPUs (see the header).
#include "backend/cuda/ptx.h"

#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "backend/llvm/codegen.h"
#include "backend/llvm/kernel_emitter.h"
#include "core/error_format.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace kiln::cuda_backend {

namespace {

using llvm_backend::Kernel;

// The architectures LLVM 16 generates code for, newest first, with the PTX
// version each needs (PTX ISA notes, "PTX ISA Version" of each target).
struct Architecture {
  int architecture;
  int ptx_version;
};
constexpr Architecture architectures[] = {{90, 78}, {89, 78}, {87, 74}, {86, 71}, {80, 70},
                                          {75, 63}, {72, 61}, {70, 60}, {61, 50}, {60, 50}};

// The newest PTX ISA version each CUDA driver compiles, from the CUDA
// toolkit release that introduced it: 11.8 brought PTX 7.8.
int newest_ptx_for_driver(int driver_version) {
  constexpr std::pair<int, int> releases[] = {{11080, 78}, {11070, 77}, {11060, 76}, {11050, 75}, {11040, 74},
                                              {11030, 73}, {11020, 72}, {11010, 71}, {11000, 70}, {10020, 65},
                                              {10010, 64}, {10000, 63}, {9020, 62},  {9010, 61},  {9000, 60}};
  for (auto [release, ptx] : releases)
    if (driver_version >= release) return ptx;
  return 50;
}

void initialize_nvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

constexpr const char* triple = "nvptx64-nvidia-cuda";

std::unique_ptr<llvm::TargetMachine> target_machine(const GpuTarget& target) {
  initialize_nvptx();
  std::string error;
  const llvm::Target* nvptx = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!nvptx)
    detail::raise("cuda", "LLVM has no NVPTX target (" + error + ")", Location(), "use an LLVM built with NVPTX");
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(
      nvptx->createTargetMachine(triple, target.architecture_name(), "+ptx" + std::to_string(target.ptx_version),
                                 options, std::nullopt, std::nullopt, llvm::CodeGenOpt::Aggressive));
  if (!machine)
    detail::raise("cuda", "LLVM cannot generate code for " + target.architecture_name(), Location(),
                  "use device \"cpu\"");
  return machine;
}

// libdevice's name for a math function of one type.
std::string libdevice_name(llvm::Intrinsic::ID id, llvm::Type* type) {
  std::string base = id == llvm::Intrinsic::sin ? "sin" : id == llvm::Intrinsic::cos ? "cos" : "pow";
  return "__nv_" + base + (type->isFloatTy() ? "f" : "");
}

// Calls of llvm.sin, llvm.cos and llvm.pow, which NVPTX cannot select, become
// calls of libdevice's functions, lane by lane for vectors.
void call_libdevice(llvm::Module& module) {
  std::vector<llvm::CallInst*> calls;
  for (llvm::Function& function : module)
    for (llvm::BasicBlock& block : function)
      for (llvm::Instruction& instruction : block)
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(&instruction))
          if (llvm::Function* callee = call->getCalledFunction()) {
            llvm::Intrinsic::ID id = callee->getIntrinsicID();
            if (id == llvm::Intrinsic::sin || id == llvm::Intrinsic::cos || id == llvm::Intrinsic::pow)
              calls.push_back(call);
          }
  for (llvm::CallInst* call : calls) {
    llvm::IRBuilder<> builder(call);
    llvm::Type* type = call->getType();
    llvm::Type* scalar = type->getScalarType();
    llvm::Intrinsic::ID id = call->getCalledFunction()->getIntrinsicID();
    std::vector<llvm::Type*> parameters(call->arg_size(), scalar);
    llvm::FunctionCallee function =
        module.getOrInsertFunction(libdevice_name(id, scalar), llvm::FunctionType::get(scalar, parameters, false));
    if (auto* declared = llvm::dyn_cast<llvm::Function>(function.getCallee())) {
      declared->setDoesNotAccessMemory();
      declared->setDoesNotThrow();
      declared->setWillReturn();
    }
    auto lane_call = [&](auto lane_of) {
      std::vector<llvm::Value*> arguments;
      for (llvm::Value* argument : call->args()) arguments.push_back(lane_of(argument));
      return builder.CreateCall(function, arguments);
    };
    llvm::Value* result = nullptr;
    if (auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(type)) {
      result = llvm::PoisonValue::get(type);
      for (unsigned lane = 0; lane < vector->getNumElements(); ++lane)
        result = builder.CreateInsertElement(
            result, lane_call([&](llvm::Value* v) { return builder.CreateExtractElement(v, uint64_t{lane}); }),
            uint64_t{lane});
    } else {
      result = lane_call([](llvm::Value* v) { return v; });
    }
    call->replaceAllUsesWith(result);
    call->eraseFromParent();
  }
}

// The intrinsics NVPTX selects or LLVM's code generator expands before it;
// anything else would stop code generation with a fatal error, so it is
// refused first, naming the kernel.
bool nvptx_handles(llvm::Intrinsic::ID id) {
  switch (id) {
    case llvm::Intrinsic::fabs:
    case llvm::Intrinsic::sqrt:
    case llvm::Intrinsic::fma:
    case llvm::Intrinsic::fmuladd:
    case llvm::Intrinsic::floor:
    case llvm::Intrinsic::ceil:
    case llvm::Intrinsic::trunc:
    case llvm::Intrinsic::rint:
    case llvm::Intrinsic::nearbyint:
    case llvm::Intrinsic::round:
    case llvm::Intrinsic::roundeven:
    case llvm::Intrinsic::copysign:
    case llvm::Intrinsic::minnum:
    case llvm::Intrinsic::maxnum:
    case llvm::Intrinsic::minimum:
    case llvm::Intrinsic::maximum:
    case llvm::Intrinsic::smin:
    case llvm::Intrinsic::smax:
    case llvm::Intrinsic::umin:
    case llvm::Intrinsic::umax:
    case llvm::Intrinsic::abs:
    case llvm::Intrinsic::ctpop:
    case llvm::Intrinsic::ctlz:
    case llvm::Intrinsic::cttz:
    case llvm::Intrinsic::fshl:
    case llvm::Intrinsic::fshr:
    case llvm::Intrinsic::bswap:
    case llvm::Intrinsic::fptosi_sat:
    case llvm::Intrinsic::fptoui_sat:
    case llvm::Intrinsic::sadd_with_overflow:
    case llvm::Intrinsic::uadd_with_overflow:
    case llvm::Intrinsic::smul_with_overflow:
    case llvm::Intrinsic::umul_with_overflow:
    case llvm::Intrinsic::memcpy:
    case llvm::Intrinsic::memmove:
    case llvm::Intrinsic::memset:
    case llvm::Intrinsic::lifetime_start:
    case llvm::Intrinsic::lifetime_end:
    case llvm::Intrinsic::assume:
    case llvm::Intrinsic::experimental_noalias_scope_decl:
    case llvm::Intrinsic::vector_reduce_add:
    case llvm::Intrinsic::vector_reduce_mul:
    case llvm::Intrinsic::vector_reduce_and:
    case llvm::Intrinsic::vector_reduce_or:
    case llvm::Intrinsic::vector_reduce_xor:
    case llvm::Intrinsic::vector_reduce_smax:
    case llvm::Intrinsic::vector_reduce_smin:
    case llvm::Intrinsic::vector_reduce_umax:
    case llvm::Intrinsic::vector_reduce_umin:
    case llvm::Intrinsic::vector_reduce_fadd:
    case llvm::Intrinsic::vector_reduce_fmul:
    case llvm::Intrinsic::vector_reduce_fmax:
    case llvm::Intrinsic::vector_reduce_fmin:
    case llvm::Intrinsic::masked_load:
    case llvm::Intrinsic::masked_store: return true;
    default: return llvm::StringRef(llvm::Intrinsic::getBaseName(id)).startswith("llvm.nvvm.");
  }
}

struct KernelOrigin {
  std::string description;
  Location where;
};

void refuse_unselectable(const llvm::Module& module, const std::map<std::string, KernelOrigin>& kernel_of_entry) {
  for (const llvm::Function& function : module) {
    if (!function.isDeclaration() || !function.isIntrinsic() || function.use_empty()) continue;
    if (nvptx_handles(function.getIntrinsicID())) continue;
    KernelOrigin origin{"a kernel", Location()};
    for (const llvm::User* user : function.users())
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(user))
        if (auto found = kernel_of_entry.find(call->getFunction()->getName().str()); found != kernel_of_entry.end())
          origin = found->second;
    detail::raise("cuda",
                  "the GPU code of " + origin.description + " needs " + function.getName().str() +
                      ", which LLVM's NVPTX backend does not generate",
                  origin.where, "run this function on the CPU (device \"cpu\")");
  }
}

void check_valid(const llvm::Module& module, const char* stage) {
  std::string problems;
  llvm::raw_string_ostream stream(problems);
  if (llvm::verifyModule(module, &stream))
    detail::internal_error(("the CUDA backend produced invalid IR " + std::string(stage) + ": " + problems).c_str(),
                           __FILE__, __LINE__);
}

// The GPU entry of one kernel: a grid-stride loop over the iterations of its
// range, calling the (always inlined) body of each (see the header).
llvm::Function* define_entry(llvm::Module& module, llvm::Function* body, const std::string& name) {
  llvm::LLVMContext& context = module.getContext();
  llvm::IRBuilder<> builder(context);
  llvm::Type* i64 = builder.getInt64Ty();
  // The body takes begin, end, then its buffers; the entry its buffers, then range, chunk and stride.
  std::vector<llvm::Type*> parameters;
  for (unsigned k = 2; k < body->arg_size(); ++k) parameters.push_back(builder.getPtrTy());
  size_t buffers = parameters.size();
  parameters.insert(parameters.end(), {i64, i64, i64});
  auto* entry = llvm::Function::Create(llvm::FunctionType::get(builder.getVoidTy(), parameters, false),
                                       llvm::Function::ExternalLinkage, name, module);
  entry->addFnAttr(llvm::Attribute::NoUnwind);
  // Outputs are fresh memory and leaves are only read: no buffer aliases one written.
  for (unsigned k = 0; k < buffers; ++k) entry->addParamAttr(k, llvm::Attribute::NoAlias);
  llvm::Value* range = entry->getArg(static_cast<unsigned>(buffers));
  llvm::Value* chunk = entry->getArg(static_cast<unsigned>(buffers) + 1);
  llvm::Value* stride = entry->getArg(static_cast<unsigned>(buffers) + 2);

  auto* start = llvm::BasicBlock::Create(context, "start", entry);
  auto* header = llvm::BasicBlock::Create(context, "iteration", entry);
  auto* run = llvm::BasicBlock::Create(context, "run", entry);
  auto* done = llvm::BasicBlock::Create(context, "done", entry);
  builder.SetInsertPoint(start);
  auto special = [&](llvm::Intrinsic::ID id) { return builder.CreateZExt(builder.CreateIntrinsic(id, {}, {}), i64); };
  llvm::Value* thread = special(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  llvm::Value* block = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  llvm::Value* block_size = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value* grid_size = special(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
  llvm::Value* first = builder.CreateAdd(builder.CreateMul(block, block_size), thread);
  llvm::Value* step = builder.CreateMul(grid_size, block_size);
  llvm::Value* iterations =
      builder.CreateUDiv(builder.CreateAdd(range, builder.CreateSub(chunk, builder.getInt64(1))), chunk);
  builder.CreateBr(header);

  builder.SetInsertPoint(header);
  llvm::PHINode* iteration = builder.CreatePHI(i64, 2, "s");
  iteration->addIncoming(first, start);
  builder.CreateCondBr(builder.CreateICmpULT(iteration, iterations), run, done);

  builder.SetInsertPoint(run);
  llvm::Value* begin = builder.CreateMul(iteration, chunk);
  llvm::Value* end = builder.CreateBinaryIntrinsic(llvm::Intrinsic::umin, builder.CreateAdd(begin, chunk), range);
  std::vector<llvm::Value*> arguments{begin, end, entry->getArg(0)};
  arguments.push_back(builder.CreateGEP(builder.getInt8Ty(), entry->getArg(1), builder.CreateMul(iteration, stride)));
  for (unsigned k = 2; k < buffers; ++k) arguments.push_back(entry->getArg(k));
  builder.CreateCall(body, arguments);
  iteration->addIncoming(builder.CreateAdd(iteration, step), run);
  builder.CreateBr(header);

  builder.SetInsertPoint(done);
  builder.CreateRetVoid();

  llvm::Metadata* annotation[] = {llvm::ValueAsMetadata::get(entry), llvm::MDString::get(context, "kernel"),
                                  llvm::ConstantAsMetadata::get(builder.getInt32(1))};
  module.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(context, annotation));
  return entry;
}

void optimize(llvm::Module& module, llvm::TargetMachine& machine) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  // A GPU thread computes one element at a time: the parallelism is the
  // grid's, and the CPU kernels' vector loops would only grow the code.
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = false;
  tuning.SLPVectorization = false;
  llvm::PassBuilder passes(&machine, tuning);
  passes.registerModuleAnalyses(modules);
  passes.registerCGSCCAnalyses(cgscc);
  passes.registerFunctionAnalyses(functions);
  passes.registerLoopAnalyses(loops);
  passes.crossRegisterProxies(loops, functions, cgscc, modules);
  passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, modules);
}

KernelOrigin kernel_origin(const ir::Graph& graph, const Kernel& kernel) {
  const ir::Node& root = graph.nodes[static_cast<size_t>(kernel.root)];
  return {"the kernel computing '" + std::string(ir::primitive_name(root.op)) + "' (" +
              std::string(dtype_name(root.type.dtype)) + shape_string(root.type.shape) + ")",
          root.where};
}

}  // namespace

GpuTarget gpu_target(int major, int minor, int driver_version) {
  int capability = 10 * major + minor;
  for (const Architecture& candidate : architectures) {
    if (candidate.architecture > capability) continue;
    // Within a major version a GPU runs code for an older minor one; across
    // major versions the driver compiles the PTX for the GPU.
    GpuTarget target{candidate.architecture, candidate.ptx_version};
    int newest = newest_ptx_for_driver(driver_version);
    if (target.ptx_version > newest)
      detail::raise("cuda",
                    "the CUDA driver (version " + std::to_string(driver_version / 1000) + "." +
                        std::to_string(driver_version % 1000 / 10) + ") compiles PTX up to ISA " +
                        std::to_string(newest / 10) + "." + std::to_string(newest % 10) + ", older than the " +
                        std::to_string(target.ptx_version / 10) + "." + std::to_string(target.ptx_version % 10) +
                        " that " + target.architecture_name() + " code needs",
                    Location(), "update the NVIDIA driver");
    return target;
  }
  detail::raise("cuda",
                "the GPU's compute capability " + std::to_string(major) + "." + std::to_string(minor) +
                    " is older than any kiln generates code for (6.0)",
                Location(), "use a GPU of compute capability 6.0 or newer, or device \"cpu\"");
}

PtxModule compile_ptx(const ir::Graph& graph, const llvm_backend::Plan& plan, const GpuTarget& target,
                      const std::string& name) {
  std::unique_ptr<llvm::TargetMachine> machine = target_machine(target);
  llvm::LLVMContext context;
  llvm::Module module(name, context);
  module.setTargetTriple(triple);
  module.setDataLayout(machine->createDataLayout());

  PtxModule result;
  result.target = target;
  std::map<std::string, KernelOrigin> kernel_of_entry;
  // Prefetching is a CPU cache's concern: each kernel is emitted without it.
  std::vector<Kernel> kernels = plan.kernels;
  for (Kernel& kernel : kernels) kernel.prefetch = false;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const Kernel& kernel = kernels[k];
    std::string host_entry = "kiln_host_entry_" + std::to_string(k);
    llvm_backend::KernelEmitter emitter(module, graph, kernel, host_entry);
    llvm_backend::CompiledKernel compiled = emitter.emit();
    // The emitter's CPU entry unpacks an array of buffers; the GPU's takes them as parameters.
    module.getFunction(host_entry)->eraseFromParent();
    GpuKernel gpu;
    gpu.entry = "kiln_gpu_kernel_" + std::to_string(k);
    gpu.output_count = 1 + static_cast<int>(kernel.extra_roots.size());
    gpu.leaf_count = static_cast<int>(kernel.leaves.size());
    gpu.constants = llvm_backend::kernel_constants(graph, kernel);
    gpu.chunked = kernel.chunked;
    if (llvm_backend::is_flat(graph, kernel)) {
      gpu.range = llvm_backend::kernel_range(graph, kernel);
      gpu.range_count = llvm_backend::SymbolicCount(llvm_backend::kernel_range_size(graph, kernel));
    } else {
      gpu.range = compiled.range;
      gpu.range_count = compiled.range_count;
    }
    define_entry(module, module.getFunction(host_entry + "_body"), gpu.entry);
    kernel_of_entry[gpu.entry] = kernel_origin(graph, kernel);
    result.kernels.push_back(std::move(gpu));
  }
  call_libdevice(module);
  check_valid(module, "before optimizing");
  optimize(module, *machine);
  check_valid(module, "after optimizing");
  refuse_unselectable(module, kernel_of_entry);
  for (const llvm::Function& function : module)
    if (function.isDeclaration() && !function.use_empty() && function.getName().startswith("__nv_"))
      result.libdevice_functions.push_back(function.getName().str());

  llvm::SmallString<0> text;
  llvm::raw_svector_ostream stream(text);
  llvm::legacy::PassManager emit;
  if (machine->addPassesToEmitFile(emit, stream, nullptr, llvm::CGFT_AssemblyFile))
    detail::raise("cuda", "LLVM's NVPTX backend cannot emit PTX text", Location(), "use device \"cpu\"");
  emit.run(module);
  result.ptx = text.str().str();
  return result;
}

}  // namespace kiln::cuda_backend
