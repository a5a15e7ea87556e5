// A GPU emulated on the host (see the header).
#include "backend/cuda/emulated_device.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>

#include "backend/cuda/gpu_entries.h"
#include "backend/llvm/engine.h"
#include "core/byte_stream.h"
#include "runtime/executable.h"

namespace kiln::cuda_backend {

namespace {

using Launcher = void (*)(void** parameters);

class EmulatedProgram final : public LoadedProgram {
 public:
  std::vector<Launcher> launchers;
  std::shared_ptr<const void> linked;  // keeps the module linked
  std::shared_ptr<const llvm_backend::ObjectCode> object;
};

// The program runs `linked`: its launchers, and the code and object they live in.
void run_linked(EmulatedProgram& program, const llvm_backend::Engine::Linked& linked) {
  for (void* address : linked.addresses) program.launchers.push_back(reinterpret_cast<Launcher>(address));
  program.linked = linked.code;
  program.object = linked.object;
}

class EmulatedDevice final : public Device {
 public:
  EmulatedDevice(int64_t blocks, int64_t threads) : blocks_(blocks), threads_(threads) {}
  ~EmulatedDevice() override { release_cache(); }

  std::string name() const override { return "emulated GPU (host)"; }
  // Its kernels are host code: saved ones load only on the same CPU.
  std::string target() const override {
    llvm_backend::Engine& engine = llvm_backend::Engine::instance();
    return "emulated " + engine.target_triple() + " cpu " + engine.cpu() + " features " + engine.features();
  }
  int64_t resident_blocks() const override { return blocks_; }
  int64_t threads_per_block() const override { return threads_; }

  void copy_to_device(DeviceAddress destination, const void* source, size_t bytes) override {
    if (bytes) std::memcpy(pointer(destination), source, bytes);
  }
  void copy_to_host(void* destination, DeviceAddress source, size_t bytes) override {
    if (bytes) std::memcpy(destination, pointer(source), bytes);
  }
  void copy_on_device(DeviceAddress destination, DeviceAddress source, size_t bytes) override {
    if (bytes) std::memmove(pointer(destination), pointer(source), bytes);
  }

  std::shared_ptr<LoadedProgram> make_program() override { return std::make_shared<EmulatedProgram>(); }

  void compile_program(LoadedProgram& loaded, const ir::Graph& graph, const llvm_backend::Plan& plan,
                       const std::string& name) override {
    auto& program = static_cast<EmulatedProgram&>(loaded);
    llvm_backend::Engine& engine = llvm_backend::Engine::instance();
    auto context = std::make_unique<llvm::LLVMContext>();
    std::unique_ptr<llvm::Module> module = engine.new_module(name, *context);
    GpuEntries entries = emit_gpu_entries(*module, graph, plan, GridSource::parameters);
    // Entry names are fixed (kiln_gpu_kernel_N) and the host JIT links every
    // module into one library: each program's get a prefix of their own.
    std::string prefix = engine.fresh_symbol_prefix();
    std::vector<std::string> symbols;
    for (GpuKernel& kernel : entries.kernels) {
      module->getFunction(kernel.entry)->setName(prefix + kernel.entry);
      kernel.entry = prefix + kernel.entry;
    }
    define_launchers(*module, entries);
    // The CPU kernels' vectorization hints ask for vectors of loops that
    // here run a few iterations per thread: dropped, so LLVM does not
    // remark on each one it cannot vectorize.
    for (llvm::Function& function : *module)
      for (llvm::BasicBlock& block : function) block.getTerminator()->setMetadata(llvm::LLVMContext::MD_loop, nullptr);
    for (const GpuKernel& kernel : entries.kernels) symbols.push_back(kernel.entry + "_launch");
    program.kernels = entries.kernels;
    if (symbols.empty()) return;
    // Compiling links the code too: link_program then has nothing to do.
    run_linked(program, engine.compile(std::move(module), std::move(context), symbols));
    detail::ByteWriter out(program.code);
    out.add_string(program.object->bytes);
    for (const std::string& symbol : program.object->symbols) out.add_string(symbol);
  }

  void link_program(LoadedProgram& loaded, const std::string&) override {
    auto& program = static_cast<EmulatedProgram&>(loaded);
    if (!program.launchers.empty()) return;  // compiled here, and linked by compiling
    try {
      detail::ByteReader in(program.code);
      auto object = std::make_shared<llvm_backend::ObjectCode>();
      object->bytes = in.read_string();
      for (const GpuKernel& kernel : program.kernels) {
        object->symbols.emplace_back(in.read_string());
        if (object->symbols.back() != kernel.entry + "_launch")
          throw runtime::SavedExecutableMismatch("a launcher's symbol is not its kernel's");
      }
      if (in.left() != 0) throw runtime::SavedExecutableMismatch("bytes are left over");
      run_linked(program, llvm_backend::Engine::instance().load(object));
    } catch (const detail::TruncatedBytes&) {
      throw runtime::SavedExecutableMismatch("the emulated program's code ends early");
    }
  }

  void launch(const LoadedProgram& loaded, const Launch& launch) override {
    const auto& program = static_cast<const EmulatedProgram&>(loaded);
    Launcher launcher = program.launchers.at(static_cast<size_t>(launch.kernel));
    std::vector<int64_t> values;
    for (DeviceAddress buffer : launch.buffers) values.push_back(static_cast<int64_t>(buffer));
    values.insert(values.end(), {launch.range, launch.chunk, launch.stride, 0, launch.threads, 0, launch.blocks});
    std::vector<void*> parameters;
    for (int64_t& value : values) parameters.push_back(&value);
    int64_t& thread = values[values.size() - 4];
    int64_t& block = values[values.size() - 2];
    for (block = 0; block < launch.blocks; ++block)
      for (thread = 0; thread < launch.threads; ++thread) launcher(parameters.data());
  }

  void multiply(const ColumnMajorProduct& p) override {
    auto ta = p.transpose_a ? CblasTrans : CblasNoTrans, tb = p.transpose_b ? CblasTrans : CblasNoTrans;
    for (int64_t i = 0; i < p.batch; ++i) {
      if (p.dtype == DType::f32) {
        cblas_sgemm(CblasColMajor, ta, tb, int(p.m), int(p.n), int(p.k), 1.0f,
                    static_cast<const float*>(pointer(p.a)) + i * p.stride_a, int(p.lda),
                    static_cast<const float*>(pointer(p.b)) + i * p.stride_b, int(p.ldb), 0.0f,
                    static_cast<float*>(pointer(p.c)) + i * p.stride_c, int(p.ldc));
      } else {
        cblas_dgemm(CblasColMajor, ta, tb, int(p.m), int(p.n), int(p.k), 1.0,
                    static_cast<const double*>(pointer(p.a)) + i * p.stride_a, int(p.lda),
                    static_cast<const double*>(pointer(p.b)) + i * p.stride_b, int(p.ldb), 0.0,
                    static_cast<double*>(pointer(p.c)) + i * p.stride_c, int(p.ldc));
      }
    }
  }

  void synchronize() override {}

 protected:
  DeviceAddress fresh_memory(size_t bytes) override {
    return reinterpret_cast<DeviceAddress>(std::aligned_alloc(256, bytes));
  }
  void free_memory(DeviceAddress address) override { std::free(pointer(address)); }

 private:
  static void* pointer(DeviceAddress address) { return reinterpret_cast<void*>(address); }
  int64_t blocks_, threads_;
};

}  // namespace

std::shared_ptr<Device> make_emulated_device(int64_t blocks, int64_t threads) {
  return std::make_shared<EmulatedDevice>(blocks, threads);
}

}  // namespace kiln::cuda_backend
