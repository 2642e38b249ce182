# torch's figure for bench/jit_step: the same 4 x Linear(256) SGD step (batch 32), eager, median ms from the
# call to the loss on the host. Usage: python3 bench/jit_step_torch.py [steps] [device]
import sys, time
import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
dev = sys.argv[2] if len(sys.argv) > 2 else ("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(7)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 256, device=dev), torch.randint(0, 10, (32,), device=dev)

def step():
  opt.zero_grad()
  loss = torch.nn.functional.cross_entropy(model(x), y)
  loss.backward()
  opt.step()
  return loss.item()

for _ in range(5): step()
ms = []
for _ in range(steps):
  t0 = time.perf_counter()
  step()
  ms.append((time.perf_counter() - t0) * 1e3)
ms.sort()
print(f"torch_eager_ms {ms[len(ms) // 2]:.3f} ({dev})")
