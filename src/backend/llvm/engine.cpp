// ORC LLJIT setup, optimization pipeline and symbol resolution.
#include "backend/llvm/engine.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/IPO/GlobalDCE.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/DeadStoreElimination.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/GVN.h>
#include <llvm/Transforms/Scalar/LICM.h>
#include <llvm/Transforms/Scalar/LoopPassManager.h>
#include <llvm/Transforms/Scalar/LoopRotation.h>
#include <llvm/Transforms/Scalar/LoopUnrollPass.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/InjectTLIMappings.h>
#include <llvm/Transforms/Utils/LCSSA.h>
#include <llvm/Transforms/Utils/LoopSimplify.h>
#include <llvm/Transforms/Vectorize/LoopVectorize.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/error_format.h"
#include "runtime/compile_profile.h"

namespace kiln::llvm_backend {

namespace {
std::string error_text(llvm::Error error) {
  std::string text;
  llvm::raw_string_ostream out(text);
  out << error;
  return text;
}

// LLVM failing to set up or link code is no mistake of the user's, and the
// engine does not know the user's line; the hint gives a way to go on.
[[noreturn]] void llvm_failed(const std::string& what, const std::string& why) {
  detail::raise("compile", "the LLVM backend failed " + what + ": " + why, Location(),
                "KILN_BACKEND=interp runs on the reference interpreter instead; please report this failure");
}

template <class T>
T unwrap(llvm::Expected<T> value, const char* what) {
  if (!value) llvm_failed(what, error_text(value.takeError()));
  return std::move(*value);
}
// The passes kernels need, and no more: kernels are small loop nests, so a
// full O2/O3 pipeline mostly spends compile time finding nothing to do.
// Inline the body into its entry, promote stack slots, clean up, make loops
// canonical with invariants hoisted, then vectorize.
template <class Manager, class... Passes>
void add_passes(Manager& manager, Passes&&... passes) {
  (manager.addPass(std::forward<Passes>(passes)), ...);
}

llvm::ModulePassManager kernel_pipeline() {
  llvm::FunctionPassManager cleanup;
  add_passes(cleanup, llvm::SROAPass(llvm::SROAOptions::ModifyCFG), llvm::EarlyCSEPass(), llvm::InstCombinePass(),
             llvm::SimplifyCFGPass(), llvm::LoopSimplifyPass(), llvm::LCSSAPass());
  llvm::LoopPassManager loops;
  // No IndVarSimplify: the emitted loops count with one canonical induction
  // variable already; it was a quarter of optimizing the MLP step's kernels.
  add_passes(loops, llvm::LoopRotatePass(), llvm::LICMPass(llvm::LICMOptions()));
  add_passes(cleanup, llvm::createFunctionToLoopPassAdaptor(std::move(loops), /*UseMemorySSA=*/true),
             llvm::LoopSimplifyPass(), llvm::LCSSAPass(),
             llvm::InjectTLIMappings(),  // exp/log/sin/cos/pow -> libmvec vector variants
             llvm::LoopVectorizePass(llvm::LoopVectorizeOptions(/*InterleaveOnlyWhenForced=*/true,
                                                                /*VectorizeOnlyWhenForced=*/false)),
             llvm::InstCombinePass(), llvm::SimplifyCFGPass(llvm::SimplifyCFGOptions().hoistCommonInsts(true)));
  llvm::ModulePassManager pipeline;
  pipeline.addPass(llvm::AlwaysInlinerPass());
  pipeline.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(cleanup)));
  // Outlined functions' scalar copies (outlined_math.h) serve the vectorizer
  // only, and a quick module's loops call no vector twin: code generation
  // would otherwise compile both.
  pipeline.addPass(llvm::GlobalDCEPass());
  return pipeline;
}

// A native loop runs its kernels' loops inside its own: the short ones
// (a few vectors) are unrolled away, so that what one kernel stores the next
// reads from registers, and carries that stay at one place become registers
// across iterations (LICM's promotion), written back once after the loop.
llvm::ModulePassManager native_loop_pipeline() {
  llvm::FunctionPassManager passes;
  llvm::LoopPassManager unroll;
  unroll.addPass(llvm::LoopFullUnrollPass(/*OptLevel=*/3));
  llvm::LoopPassManager promote;
  promote.addPass(llvm::LICMPass(llvm::LICMOptions()));
  add_passes(passes, llvm::createFunctionToLoopPassAdaptor(std::move(unroll)),
             llvm::SROAPass(llvm::SROAOptions::ModifyCFG), llvm::InstCombinePass(), llvm::GVNPass(),
             llvm::SimplifyCFGPass(), llvm::LoopSimplifyPass(), llvm::LCSSAPass(),
             llvm::createFunctionToLoopPassAdaptor(std::move(promote), /*UseMemorySSA=*/true), llvm::GVNPass(),
             llvm::DSEPass(), llvm::InstCombinePass(), llvm::SimplifyCFGPass());
  llvm::ModulePassManager pipeline = kernel_pipeline();
  pipeline.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(passes)));
  return pipeline;
}

}  // namespace

namespace {
// Code generator options kiln sets, each for compile time at no measured
// speed (bench_kernels, bench_mlp, KILN_PROFILE per kernel, alternating
// runs). KILN_LLVM_OPTIONS="-disable-lsr=false ..." passes options to LLVM
// for experiments; they are parsed once, when the engine starts.
void configure_code_generation() {
  llvm::StringMap<llvm::cl::Option*>& options = llvm::cl::getRegisteredOptions();
  auto set = [&](const char* name, bool value) {
    if (auto found = options.find(name); found != options.end())
      static_cast<llvm::cl::opt<bool>*>(found->second)->setValue(value);
  };
  // Loop strength reduction rewrites the addressing of loops that the
  // vectorizer left simple already: on the MLP step's kernels it was 40% of
  // code generation (160 -> 90 ms).
  set("disable-lsr", true);
  // Epilogue vectorization compiles a loop's body a third time, as a narrower
  // vector loop for the remainder before the scalar one. Without it the MLP
  // step's code generation takes 48 ms rather than 56 (summed over both
  // modules); a remainder is under one vector, and long bodies fold it into
  // the vector loop anyway (LoopHints::fold_tail). Folding every tail saves
  // more, but masked stores are slow on some AVX-512 processors: the Adam
  // update ran at half speed on AMD EPYC.
  set("enable-epilogue-vectorization", false);
  // The scheduler before register allocation orders instructions for
  // latency and register pressure; on the out-of-order cores measured it
  // bought nothing, not even on 25 rounds of tanh, and without it the MLP
  // step compiles in 37-39 ms rather than 40-43, the 100-node graph in 26-27
  // rather than 30.
  set("enable-misched", false);
  const char* text = std::getenv("KILN_LLVM_OPTIONS");
  if (!text || !*text) return;
  std::vector<std::string> words;
  std::string all = text;
  for (size_t at = 0; at < all.size();) {
    size_t end = std::min(all.find(' ', at), all.size());
    if (end > at) words.push_back(all.substr(at, end - at));
    at = end + 1;
  }
  std::vector<const char*> arguments = {"kiln"};
  for (const std::string& word : words) arguments.push_back(word.c_str());
  llvm::cl::ParseCommandLineOptions(static_cast<int>(arguments.size()), arguments.data(), "KILN_LLVM_OPTIONS",
                                    &llvm::errs());
}
}  // namespace

struct Engine::State {
  std::mutex mutex;  // guards linking and the members below it
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> target;
  // A target machine is not safe to share between threads (its subtarget
  // cache): each compile borrows one of its own, so compiles on several
  // threads (the compile thread, eager operations) never wait for each other.
  std::optional<llvm::orc::JITTargetMachineBuilder> machine_builder;
  std::mutex machines_mutex;
  std::vector<std::unique_ptr<llvm::TargetMachine>> idle_machines;
  std::string cpu;
  size_t modules = 0;
  std::atomic<size_t> linked{0};  // modules linked and not yet unlinked
  std::atomic<size_t> compiled{0};
  std::atomic<size_t> quick{0};             // of those, with quick code (runtime::CodeQuality)
  std::atomic<bool> generated_code{false};  // by any thread, once: the code generator's statics exist
  // The process's symbols (libm, libmvec, kiln's runtime) and nothing else:
  // every loaded object's library links against it, so none searches the
  // process on its own and none sees the code compiled here.
  llvm::orc::JITDylib* process_symbols = nullptr;
  // By their bytes: the loaded objects linked now (held weakly).
  std::unordered_map<std::string, std::weak_ptr<const Engine::Linked>> linked_objects;
};

// Never destroyed: kiln's compile thread may be compiling while the process exits.
Engine& Engine::instance() {
  static Engine& engine = *new Engine;
  return engine;
}

Engine::Engine() : state_(std::make_shared<State>()) {
  configure_code_generation();
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // Vectorized loops call glibc's vector math (_ZGVdN8v_expf, ...): make it
  // visible to the process search below.
  llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1");
  llvm::sys::DynamicLibrary::LoadLibraryPermanently("libm.so.6");

  auto builder = unwrap(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
  // Instruction selection and scheduling at the default level: the loops are
  // already vectorized by then, and the aggressive level mostly costs time.
  builder.setCodeGenOptLevel(llvm::CodeGenOpt::Default);
  state_->cpu = builder.getCPU();
  state_->target = unwrap(builder.createTargetMachine(), "creating the target machine");
  state_->machine_builder = builder;
  state_->jit = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(builder).create(), "creating the JIT");
  auto& library = state_->jit->getMainJITDylib();
  library.addGenerator(unwrap(
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(state_->jit->getDataLayout().getGlobalPrefix()),
      "searching the process for symbols"));
  state_->process_symbols = &state_->jit->getExecutionSession().createBareJITDylib("kiln-process");
  state_->process_symbols->addGenerator(unwrap(
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(state_->jit->getDataLayout().getGlobalPrefix()),
      "searching the process for symbols"));
}

const std::string& Engine::cpu() const { return state_->cpu; }
std::string Engine::features() const { return state_->target->getTargetFeatureString().str(); }
int Engine::vector_bytes() const {
  llvm::StringRef features = state_->target->getTargetFeatureString();
  return features.contains("+avx512f") ? 64 : features.contains("+avx") ? 32 : 16;
}
std::string Engine::target_triple() const { return state_->jit->getTargetTriple().str(); }
size_t Engine::linked_modules() const { return state_->linked.load(); }

size_t Engine::modules_compiled() const { return state_->compiled.load(); }
size_t Engine::quick_modules_compiled() const { return state_->quick.load(); }

std::unique_ptr<llvm::Module> Engine::new_module(const std::string& name, llvm::LLVMContext& context) const {
  auto module = std::make_unique<llvm::Module>(name, context);
  module->setDataLayout(state_->jit->getDataLayout());
  module->setTargetTriple(state_->jit->getTargetTriple().str());
  return module;
}

// KILN_PERF_MAP=1 names compiled kernels for `perf report` through
// /tmp/perf-PID.map, the file perf reads for code generated at run time.
// Kernels of one module are laid out one after another, so each is given
// the distance to the next one's address as its size (the last, 16 KiB).
namespace {
void write_perf_map(const std::vector<std::string>& symbols, const std::vector<void*>& addresses) {
  const char* enabled = std::getenv("KILN_PERF_MAP");
  if (!enabled || std::string_view(enabled) != "1") return;
  std::vector<std::pair<uintptr_t, std::string>> kernels;
  for (size_t k = 0; k < symbols.size(); ++k)
    kernels.emplace_back(reinterpret_cast<uintptr_t>(addresses[k]), symbols[k]);
  std::sort(kernels.begin(), kernels.end());
  std::ofstream map("/tmp/perf-" + std::to_string(getpid()) + ".map", std::ios::app);
  for (size_t k = 0; k < kernels.size(); ++k) {
    uintptr_t size = k + 1 < kernels.size() ? kernels[k + 1].first - kernels[k].first : 16 << 10;
    map << std::hex << kernels[k].first << " " << size << std::dec << " " << kernels[k].second << "\n";
  }
}
}  // namespace

namespace {
void check_valid(const llvm::Module& module) {
  std::string problems;
  llvm::raw_string_ostream problem_stream(problems);
  if (llvm::verifyModule(module, &problem_stream))
    detail::internal_error(("the LLVM backend produced invalid IR: " + problems).c_str(), __FILE__, __LINE__);
}

// Functions carry the host CPU and its features so the vectorizer uses the
// widest registers the machine has.
void target_the_host(llvm::Module& module, const llvm::TargetMachine& target) {
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    function.addFnAttr("target-cpu", target.getTargetCPU());
    function.addFnAttr("target-features", target.getTargetFeatureString());
    // LLVM's tuning for recent x86 CPUs caps loops at 256-bit vectors to
    // spare clock speed; kernels here are long arithmetic chains where full
    // 512-bit vectors measured faster (W1: 1.3x on 2 threads).
    function.addFnAttr("prefer-vector-width", "512");
  }
}

// LLVM knows glibc's SSE and AVX2 variants only (4 and 8 f32 lanes, 2 and 4
// f64 lanes). On AVX-512 a loop vectorized 16 f32 wide called the 8-lane
// variant twice, and one 8 f64 wide (as a fused f64 kernel often is) split
// each vector into 8 scalar calls: 1.2x slower than running its operations
// one by one. glibc's AVX-512 sin, cos and pow return the same bits as its
// AVX2 ones (MathVectorization.AvxFiveTwelveVariantsGiveTheAvxTwoBits), so
// an element's value does not depend on the width its loop got; they also
// run faster (powf 2.3 -> 1.6 ns, sinf 0.38 -> 0.23 ns per element). glibc's
// AVX-512 f64 log differs from its AVX2 one; kiln computes log itself.
struct Avx512Variant {
  const char* function;   // libm's name
  const char* intrinsic;  // LLVM's name for the same function
  const char* variant;
  unsigned lanes;
};
constexpr Avx512Variant avx512_variants[] = {
    {"sinf", "llvm.sin.f32", "_ZGVeN16v_sinf", 16},  {"cosf", "llvm.cos.f32", "_ZGVeN16v_cosf", 16},
    {"powf", "llvm.pow.f32", "_ZGVeN16vv_powf", 16}, {"sin", "llvm.sin.f64", "_ZGVeN8v_sin", 8},
    {"cos", "llvm.cos.f64", "_ZGVeN8v_cos", 8},      {"pow", "llvm.pow.f64", "_ZGVeN8vv_pow", 8},
};

// The table the vectorizer reads: each variant under both names of its function.
// Never destroyed: the first compile may be the compile thread's, running
// while the process exits (static destructors run before the exit hook
// that stops that thread when they were registered after it).
const std::vector<llvm::VecDesc>& avx512_math() {
  static const auto& table = *new std::vector<llvm::VecDesc>([] {
    std::vector<llvm::VecDesc> rows;
    for (const Avx512Variant& variant : avx512_variants)
      for (const char* name : {variant.function, variant.intrinsic})
        rows.push_back({name, variant.variant, llvm::ElementCount::getFixed(variant.lanes)});
    return rows;
  }());
  return table;
}

// Runs `pipeline` with glibc's vector math known to the vectorizer.
void optimize(llvm::Module& module, llvm::TargetMachine& target, llvm::ModulePassManager pipeline) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;

  llvm::TargetLibraryInfoImpl library_info(llvm::Triple(module.getTargetTriple()));
  library_info.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86,
                                                  llvm::Triple(module.getTargetTriple()));
  if (Engine::instance().vector_bytes() == 64) library_info.addVectorizableFunctions(avx512_math());
  functions.registerPass([&] { return llvm::TargetLibraryAnalysis(library_info); });
  // A process exiting abandons compiles: the remaining passes are skipped.
  llvm::PassInstrumentationCallbacks instrumentation;
  instrumentation.registerShouldRunOptionalPassCallback(
      [](llvm::StringRef, llvm::Any) { return !runtime::compiles_abandoned(); });
  llvm::PassBuilder passes(&target, llvm::PipelineTuningOptions(), std::nullopt, &instrumentation);
  passes.registerModuleAnalyses(modules);
  passes.registerCGSCCAnalyses(cgscc);
  passes.registerFunctionAnalyses(functions);
  passes.registerLoopAnalyses(loops);
  passes.crossRegisterProxies(loops, functions, cgscc, modules);
  pipeline.run(module, modules);
}

// KILN_DUMP: the optimized IR (.ll) and its assembly (.s).
void dump(const llvm::Module& module, llvm::TargetMachine& target, const std::string& prefix) {
  std::error_code error;
  llvm::raw_fd_ostream ir(prefix + ".ll", error, llvm::sys::fs::OF_Text);
  if (!error) module.print(ir, nullptr);
  llvm::raw_fd_ostream assembly(prefix + ".s", error, llvm::sys::fs::OF_Text);
  if (!error) {
    llvm::legacy::PassManager emit;
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(module);
    if (!target.addPassesToEmitFile(emit, assembly, nullptr, llvm::CGFT_AssemblyFile)) emit.run(*copy);
  }
}

// Code generation here rather than in the JIT's compile layer: the object
// file is what a persistent cache entry keeps, and loading it later links
// without running LLVM's optimizer or code generator.
std::shared_ptr<ObjectCode> generate_object(llvm::Module& module, llvm::TargetMachine& target,
                                            const std::vector<std::string>& symbols) {
  auto object = std::make_shared<ObjectCode>();
  object->symbols = symbols;
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream stream(bytes);
  llvm::legacy::PassManager emit;
  if (target.addPassesToEmitFile(emit, stream, nullptr, llvm::CGFT_ObjectFile))
    llvm_failed("emitting code", "the target cannot emit object files");
  emit.run(module);
  object->bytes.assign(bytes.begin(), bytes.end());
  return object;
}
}  // namespace

namespace {
// A target machine borrowed for one compile, returned when it ends.
class BorrowedMachine {
 public:
  BorrowedMachine(std::mutex& mutex, std::vector<std::unique_ptr<llvm::TargetMachine>>& idle,
                  llvm::orc::JITTargetMachineBuilder builder)
      : mutex_(mutex), idle_(idle) {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        machine_ = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (!machine_) machine_ = unwrap(builder.createTargetMachine(), "creating a target machine");
  }
  ~BorrowedMachine() {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(machine_));
  }
  llvm::TargetMachine& operator*() const { return *machine_; }

 private:
  std::mutex& mutex_;
  std::vector<std::unique_ptr<llvm::TargetMachine>>& idle_;
  std::unique_ptr<llvm::TargetMachine> machine_;
};
}  // namespace

void Engine::make_code_generator_statics() {
  if (state_->generated_code.load(std::memory_order_acquire)) return;
  // A vector multiply and a call: instruction selection, scheduling and
  // emission of the kind every kernel goes through, without the optimizer.
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> module = new_module("kiln_code_generator_statics", *context);
  llvm::Type* vector = llvm::FixedVectorType::get(llvm::Type::getFloatTy(*context), 8);
  llvm::Type* pointer = llvm::PointerType::getUnqual(*context);
  auto* function = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(*context), {pointer}, false),
                                          llvm::Function::ExternalLinkage, "kiln_code_generator_statics", *module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(*context, "entry", function));
  llvm::Value* values = builder.CreateLoad(vector, function->getArg(0));
  llvm::FunctionCallee exp =
      module->getOrInsertFunction("expf", llvm::FunctionType::get(builder.getFloatTy(), {builder.getFloatTy()}, false));
  llvm::Value* first = builder.CreateCall(exp, {builder.CreateExtractElement(values, uint64_t{0})});
  builder.CreateStore(builder.CreateInsertElement(builder.CreateFMul(values, values), first, uint64_t{0}),
                      function->getArg(0));
  builder.CreateRetVoid();
  BorrowedMachine machine(state_->machines_mutex, state_->idle_machines, *state_->machine_builder);
  target_the_host(*module, *machine);
  generate_object(*module, *machine, {"kiln_code_generator_statics"});
  state_->generated_code.store(true, std::memory_order_release);
}

Engine::Linked Engine::compile(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                               const std::vector<std::string>& symbols, const std::string& dump_prefix,
                               Pipeline pipeline_kind) {
  check_valid(*module);
  BorrowedMachine machine(state_->machines_mutex, state_->idle_machines, *state_->machine_builder);
  llvm::TargetMachine& target = *machine;
  bool quick = runtime::code_quality() == runtime::CodeQuality::quick;
  // Set on every compile: the borrowed machine may come from a quick one.
  target.setOptLevel(quick ? llvm::CodeGenOpt::None : llvm::CodeGenOpt::Default);
  target_the_host(*module, target);
  {
    runtime::PhaseTimer timer(runtime::CompilePhase::optimize);
    optimize(*module, target, pipeline_kind == Pipeline::native_loop ? native_loop_pipeline() : kernel_pipeline());
  }
  runtime::check_not_abandoned();
  if (!dump_prefix.empty()) dump(*module, target, dump_prefix);
  std::shared_ptr<ObjectCode> object;
  {
    runtime::PhaseTimer timer(runtime::CompilePhase::codegen);
    object = generate_object(*module, target, symbols);
    state_->generated_code.store(true, std::memory_order_release);
    module.reset();
    context.reset();
  }
  if (runtime::CompileProfile* profile = runtime::current_compile_profile()) profile->count_module();
  // Symbols compiled here are unique in this process (fresh_symbol_prefix):
  // the main library holds them all.
  runtime::PhaseTimer timer(runtime::CompilePhase::link);
  std::lock_guard lock(state_->mutex);
  auto tracker = state_->jit->getMainJITDylib().createResourceTracker();
  std::vector<void*> addresses = add_object(state_->jit->getMainJITDylib(), tracker, *object);
  write_perf_map(symbols, addresses);
  ++state_->modules;
  ++state_->linked;
  ++state_->compiled;
  if (quick) ++state_->quick;
  auto code = std::shared_ptr<const void>(nullptr, [state = state_, tracker](const void*) {
    std::lock_guard lock(state->mutex);
    llvm::consumeError(tracker->remove());
    --state->linked;
  });
  return {std::move(addresses), std::move(code), std::move(object)};
}

// Called with the mutex held: the object's symbols looked up in `library`;
// on failure nothing of it stays linked.
std::vector<void*> Engine::add_object(llvm::orc::JITDylib& library, const llvm::orc::ResourceTrackerSP& tracker,
                                      const ObjectCode& object) {
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.bytes.data(), object.bytes.size()),
                                                     object.symbols.empty() ? "kiln" : object.symbols.front());
  std::vector<void*> addresses;
  try {
    if (auto error = state_->jit->addObjectFile(tracker, std::move(buffer)))
      llvm_failed("adding an object", error_text(std::move(error)));
    // One lookup for all the object's symbols: a lookup per symbol costs a
    // round through the session each, most of a small object's load time.
    llvm::orc::SymbolLookupSet wanted;
    std::vector<llvm::orc::SymbolStringPtr> names;
    for (const std::string& symbol : object.symbols) {
      names.push_back(state_->jit->mangleAndIntern(symbol));
      wanted.add(names.back());
    }
    wanted.removeDuplicates();
    llvm::orc::SymbolMap found =
        unwrap(state_->jit->getExecutionSession().lookup(
                   llvm::orc::makeJITDylibSearchOrder(&library, llvm::orc::JITDylibLookupFlags::MatchAllSymbols),
                   std::move(wanted)),
               "looking up the kernels");
    for (const llvm::orc::SymbolStringPtr& name : names)
      addresses.push_back(reinterpret_cast<void*>(static_cast<uintptr_t>(found.find(name)->second.getAddress())));
  } catch (...) {
    llvm::consumeError(tracker->remove());
    throw;
  }
  return addresses;
}

// An object from a saved executable links into a library of its own:
// another process (a fork of one parent, say) may have used the same symbol
// names for other code, and an object linked again before the last copy's
// unlinking finished must not meet its own names. The same object (two
// entries sharing a module, or an entry loaded again while its code is
// alive) is shared, recognized by its bytes.
Engine::Linked Engine::load(const std::shared_ptr<const ObjectCode>& object) {
  std::lock_guard lock(state_->mutex);
  std::string identity(16, '\0');
  XXH128_hash_t digest = XXH3_128bits(object->bytes.data(), object->bytes.size());
  std::memcpy(identity.data(), &digest, sizeof digest);
  for (const std::string& symbol : object->symbols) identity += "|" + symbol;
  std::weak_ptr<const Linked>& slot = state_->linked_objects[identity];
  if (std::shared_ptr<const Linked> alive = slot.lock()) {
    Linked result = *alive;
    result.code = alive;
    return result;
  }
  llvm::orc::ExecutionSession& session = state_->jit->getExecutionSession();
  auto created = state_->jit->createJITDylib("kiln-loaded-" + std::to_string(state_->modules++));
  if (!created) llvm_failed("creating a library", error_text(created.takeError()));
  llvm::orc::JITDylib& library = *created;
  library.addToLinkOrder(*state_->process_symbols);
  std::vector<void*> addresses;
  try {
    addresses = add_object(library, library.getDefaultResourceTracker(), *object);
  } catch (...) {
    llvm::consumeError(session.removeJITDylib(library));
    throw;
  }
  ++state_->linked;
  // The last holder (executables, the kernel cache; this table holds it weakly) unlinks.
  auto shared =
      std::shared_ptr<Linked>(new Linked{std::move(addresses), nullptr, object},
                              [state = state_, library = &library, identity](Linked* linked) {
                                delete linked;
                                std::lock_guard lock(state->mutex);
                                llvm::consumeError(state->jit->getExecutionSession().removeJITDylib(*library));
                                --state->linked;
                                auto found = state->linked_objects.find(identity);
                                if (found != state->linked_objects.end() && found->second.expired())
                                  state->linked_objects.erase(found);
                              });
  slot = shared;
  Linked result = *shared;
  result.code = shared;
  return result;
}

std::string Engine::fresh_symbol_prefix() {
  static std::atomic<uint64_t> counter{0};
  return "kiln_" + std::to_string(counter.fetch_add(1)) + "_";
}

}  // namespace kiln::llvm_backend
