// GPU entries of a plan's kernels (see the header).
#include "backend/cuda/gpu_entries.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "backend/llvm/codegen.h"
#include "backend/llvm/kernel_emitter.h"

namespace kiln::cuda_backend {

namespace {

using llvm_backend::Kernel;

// The GPU entry of one kernel: a grid-stride loop over the iterations of its
// range, calling the (always inlined) body of each (see ptx.h).
llvm::Function* define_entry(llvm::Module& module, llvm::Function* body, const std::string& name, GridSource grid) {
  llvm::LLVMContext& context = module.getContext();
  llvm::IRBuilder<> builder(context);
  llvm::Type* i64 = builder.getInt64Ty();
  // The body takes begin, end, then its buffers; the entry its buffers, then
  // range, chunk and stride (and on the host, its place in the grid).
  std::vector<llvm::Type*> parameters;
  for (unsigned k = 2; k < body->arg_size(); ++k) parameters.push_back(builder.getPtrTy());
  const auto buffers = static_cast<unsigned>(parameters.size());
  parameters.insert(parameters.end(), 3, i64);
  if (grid == GridSource::parameters) parameters.insert(parameters.end(), 4, i64);
  auto* entry = llvm::Function::Create(llvm::FunctionType::get(builder.getVoidTy(), parameters, false),
                                       llvm::Function::ExternalLinkage, name, module);
  entry->addFnAttr(llvm::Attribute::NoUnwind);
  // Outputs are fresh memory and leaves are only read: no buffer aliases one written.
  for (unsigned k = 0; k < buffers; ++k) entry->addParamAttr(k, llvm::Attribute::NoAlias);
  llvm::Value* range = entry->getArg(buffers);
  llvm::Value* chunk = entry->getArg(buffers + 1);
  llvm::Value* stride = entry->getArg(buffers + 2);

  auto* start = llvm::BasicBlock::Create(context, "start", entry);
  auto* header = llvm::BasicBlock::Create(context, "iteration", entry);
  auto* run = llvm::BasicBlock::Create(context, "run", entry);
  auto* done = llvm::BasicBlock::Create(context, "done", entry);
  builder.SetInsertPoint(start);
  llvm::Value *thread, *block_size, *block, *grid_size;
  if (grid == GridSource::special_registers) {
    auto special = [&](llvm::Intrinsic::ID id) { return builder.CreateZExt(builder.CreateIntrinsic(id, {}, {}), i64); };
    thread = special(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
    block_size = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
    block = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    grid_size = special(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
  } else {
    thread = entry->getArg(buffers + 3);
    block_size = entry->getArg(buffers + 4);
    block = entry->getArg(buffers + 5);
    grid_size = entry->getArg(buffers + 6);
  }
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

  if (grid == GridSource::special_registers) {
    llvm::Metadata* annotation[] = {llvm::ValueAsMetadata::get(entry), llvm::MDString::get(context, "kernel"),
                                    llvm::ConstantAsMetadata::get(builder.getInt32(1))};
    module.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(context, annotation));
  }
  return entry;
}

KernelOrigin kernel_origin(const ir::Graph& graph, const Kernel& kernel) {
  const ir::Node& root = graph.nodes[static_cast<size_t>(kernel.root)];
  return {"the kernel computing '" + std::string(ir::primitive_name(root.op)) + "' (" +
              std::string(dtype_name(root.type.dtype)) + shape_string(root.type.shape) + ")",
          root.where};
}

}  // namespace

GpuEntries emit_gpu_entries(llvm::Module& module, const ir::Graph& graph, const llvm_backend::Plan& plan,
                            GridSource grid) {
  GpuEntries entries;
  // Prefetching is a CPU cache's concern: each kernel is emitted without it.
  std::vector<Kernel> kernels = plan.kernels;
  for (Kernel& kernel : kernels) kernel.prefetch = false;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const Kernel& kernel = kernels[k];
    std::string host_entry = "kiln_host_entry_" + std::to_string(k);
    llvm_backend::KernelEmitter emitter(module, graph, kernel, host_entry);
    emitter.accumulate_in_registers();
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
    define_entry(module, module.getFunction(host_entry + "_body"), gpu.entry, grid);
    entries.origin_of_entry[gpu.entry] = kernel_origin(graph, kernel);
    entries.kernels.push_back(std::move(gpu));
  }
  return entries;
}

void define_launchers(llvm::Module& module, const GpuEntries& entries) {
  llvm::LLVMContext& context = module.getContext();
  llvm::IRBuilder<> builder(context);
  for (const GpuKernel& kernel : entries.kernels) {
    llvm::Function* entry = module.getFunction(kernel.entry);
    auto* launcher = llvm::Function::Create(llvm::FunctionType::get(builder.getVoidTy(), {builder.getPtrTy()}, false),
                                            llvm::Function::ExternalLinkage, kernel.entry + "_launch", module);
    builder.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", launcher));
    std::vector<llvm::Value*> arguments;
    for (unsigned k = 0; k < entry->arg_size(); ++k) {
      llvm::Value* slot = builder.CreateConstGEP1_64(builder.getPtrTy(), launcher->getArg(0), k);
      llvm::Value* where = builder.CreateLoad(builder.getPtrTy(), slot);
      arguments.push_back(builder.CreateLoad(entry->getArg(k)->getType(), where));
    }
    builder.CreateCall(entry, arguments);
    builder.CreateRetVoid();
  }
}

}  // namespace kiln::cuda_backend
