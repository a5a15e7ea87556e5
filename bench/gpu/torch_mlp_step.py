"""The MLP training step of bench_gpu (examples/mlp.h: 784 -> 512 -> 512 -> 10,
ReLU, softmax cross-entropy, Adam) in PyTorch on the same GPU, timed the same
way: steps run back to back on device-resident data, then one synchronize.
Prints the milliseconds per step, the minimum and the median of the repeats."""
import statistics
import sys
import time

import torch


def main() -> int:
    if not torch.cuda.is_available():
        print("torch MLP step: no CUDA device")
        return 1
    device = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False  # kiln's products are full f32
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    ).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(256, 784, device=device)
    y = torch.randint(0, 10, (256,), device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    per_step = []
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        per_step.append((time.perf_counter() - start) / steps * 1e3)
    print(f"torch MLP step ms: min {min(per_step):.4f} median {statistics.median(per_step):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
