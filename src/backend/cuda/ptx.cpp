// PTX for NVIDIA GPUs (see the header).
#include "backend/cuda/ptx.h"

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "backend/cuda/gpu_entries.h"
#include "core/error_format.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace kiln::cuda_backend {

namespace {

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

// Links the libdevice functions `module` calls from the bitcode at `path`,
// each made internal so that what no kernel calls is dropped. libdevice
// reads __nvvm_reflect("__CUDA_FTZ"), which NVPTX's reflect pass answers
// from this module flag: 0 keeps subnormal numbers, as the CPU does.
void link_libdevice(llvm::Module& module, const std::string& path) {
  bool needed = false;
  for (const llvm::Function& function : module)
    needed = needed || (function.isDeclaration() && function.getName().startswith("__nv_"));
  if (!needed) return;
  llvm::SMDiagnostic problem;
  std::unique_ptr<llvm::Module> library = llvm::parseIRFile(path, problem, module.getContext());
  if (!library)
    detail::raise("cuda", "cannot read libdevice at '" + path + "': " + problem.getMessage().str(), Location(),
                  "point KILN_LIBDEVICE at the CUDA toolkit's nvvm/libdevice/libdevice.10.bc");
  library->setTargetTriple(module.getTargetTriple());
  library->setDataLayout(module.getDataLayout());
  module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  bool failed = llvm::Linker::linkModules(module, std::move(library), llvm::Linker::Flags::LinkOnlyNeeded,
                                          [](llvm::Module& linked, const llvm::StringSet<>& names) {
                                            for (llvm::Function& function : linked)
                                              if (!function.isDeclaration() && names.contains(function.getName()))
                                                function.setLinkage(llvm::GlobalValue::InternalLinkage);
                                          });
  if (failed) detail::raise("cuda", "linking libdevice from '" + path + "' failed", Location(), "");
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

std::string find_libdevice() {
  if (const char* chosen = std::getenv("KILN_LIBDEVICE"); chosen && *chosen) return chosen;
  std::vector<std::filesystem::path> candidates;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = std::getenv(variable); root && *root)
      candidates.push_back(std::filesystem::path(root) / "nvvm/libdevice/libdevice.10.bc");
  candidates.push_back("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
  candidates.push_back("/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc");
  for (const std::filesystem::path& candidate : candidates) {
    std::error_code ignored;
    if (std::filesystem::is_regular_file(candidate, ignored)) return candidate.string();
  }
  return {};
}

PtxModule compile_ptx(const ir::Graph& graph, const llvm_backend::Plan& plan, const GpuTarget& target,
                      const std::string& name, const std::string& libdevice) {
  std::unique_ptr<llvm::TargetMachine> machine = target_machine(target);
  llvm::LLVMContext context;
  llvm::Module module(name, context);
  module.setTargetTriple(triple);
  module.setDataLayout(machine->createDataLayout());

  PtxModule result;
  result.target = target;
  GpuEntries entries = emit_gpu_entries(module, graph, plan, GridSource::special_registers);
  result.kernels = entries.kernels;
  call_libdevice(module);
  if (!libdevice.empty()) link_libdevice(module, libdevice);
  check_valid(module, "before optimizing");
  optimize(module, *machine);
  check_valid(module, "after optimizing");
  refuse_unselectable(module, entries.origin_of_entry);
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
