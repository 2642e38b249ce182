"""The VIZ viewer (python/tinygrad_cpp/viz): its server, and its page in a real browser (Debian's headless
Chromium) over the sample trace, a generated 10,000-node one and a trace that the library wrote for a @ b + c.
Only the last needs the compiled module (in a subprocess, as scripts/run-python-tests.sh puts it on PYTHONPATH)."""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import pytest

VIZ_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python", "tinygrad_cpp", "viz")
SERVE = os.path.join(VIZ_DIR, "serve.py")


def load_serve():
  spec = importlib.util.spec_from_file_location("viz_serve", SERVE)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod


class Server:
  """serve.py on a free port, over `trace`, for the length of a with-block."""
  def __init__(self, trace):
    self.proc = subprocess.Popen([sys.executable, SERVE, trace, "--port", "0"], stdout=subprocess.PIPE, text=True)
    line = self.proc.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    assert m, f"serve.py printed {line!r}"
    self.url = m.group(0)

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.proc.terminate()
    self.proc.wait(timeout=10)


def get(url):
  try:
    with urllib.request.urlopen(url, timeout=10) as r:
      return r.status, r.read()
  except urllib.error.HTTPError as e:
    return e.code, b""


def test_only_loopback_clients():
  serve = load_serve()
  for ok in ["127.0.0.1", "127.5.6.7", "::1"]:
    assert serve.is_local_client(ok), ok
  for bad in ["10.0.0.1", "192.168.1.2", "8.8.8.8", "::ffff:10.0.0.1", "", "localhost", "garbage"]:
    assert not serve.is_local_client(bad), bad


def test_server_serves_the_page_and_the_trace():
  trace = os.path.join(VIZ_DIR, "sample_trace.json")
  with Server(trace) as s:
    for path in ["", "viz.js", "viz.css"]:
      status, body = get(s.url + path)
      assert status == 200 and body, path
    status, body = get(s.url + "trace.json")
    assert status == 200 and body == open(trace, "rb").read()
    assert get(s.url + "nope")[0] == 404
    assert get(s.url + "../serve.py")[0] == 404


def chromium():
  exe = shutil.which("chromium")
  if not exe:
    pytest.fail("headless Chromium is needed: install Debian's chromium (scripts/run-python-tests.sh does)")
  return exe


def check_page_in_chromium(trace_path, expect, screenshot=None):
  """Loads the viewer over `trace_path` in headless Chromium; returns the rendered DOM after checking that each
  string of `expect` is in it. Writes a screenshot to `screenshot` when given."""
  exe = chromium()
  with Server(trace_path) as s, tempfile.TemporaryDirectory() as profile:
    # --no-sandbox: Chromium refuses to run as root without it; a fresh profile: no state from an earlier run
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
            "--virtual-time-budget=10000"]
    run = subprocess.run(base + ["--dump-dom", s.url], capture_output=True, text=True, timeout=60)
    dom = run.stdout
    assert "<ul id=\"contexts\">" in dom, f"chromium dumped no page (rc {run.returncode}): {run.stderr[-2000:]}"
    for e in expect:
      assert e in dom, f"{e!r} not in the page"
    if screenshot:
      if os.path.exists(screenshot):
        os.remove(screenshot)  # (so that the size check below sees this run's picture)
      subprocess.run(base + ["--window-size=1400,900", f"--screenshot={screenshot}", s.url], capture_output=True,
                     timeout=60)
  return dom


def test_page_in_chromium_over_the_sample(tmp_path):
  shot = os.environ.get("TG_VIZ_SCREENSHOT") or str(tmp_path / "viz.png")
  dom = check_page_in_chromium(os.path.join(VIZ_DIR, "sample_trace.json"),
                               ["kernel r_4_4", ">lower", "r_4_4(float* data0", "UPCAST(0, 4)",
                                "1. REDUCE_AXIS -&gt; MUL", "4. SINK -&gt; SINK"], screenshot=shot)
  assert len(re.findall(r'class="node', dom)) == 6  # the lower step's output: SINK, MUL, LOAD, INDEX and two leaves
  assert 'class="node changed"' in dom  # the lower step made nodes its input did not have
  assert 'class="bar"' in dom  # the one run, in the timeline
  assert os.path.getsize(shot) > 10_000


def big_trace(n, seed=0):
  """A trace of one kernel whose one step's output is an n-node graph: a few leaves, then nodes of one or two
  sources each, under one SINK. Ids are shuffled, so sources often have larger ids than their users (the format
  does not promise an order). The step's input is the graph without its last tenth, so that part is new."""
  import random
  rng = random.Random(seed)
  nodes = [["DEFINE_GLOBAL", "float*", str(i), []] for i in range(8)]
  for i in range(8, n - 1):
    srcs = sorted({rng.randrange(max(0, i - 200), i) for _ in range(rng.choice([1, 2]))})
    nodes.append([rng.choice(["ADD", "MUL", "LOAD", "INDEX"]), "float", f"arg {i}" * (i % 3), srcs])
  users = {s for nd in nodes for s in nd[3]}
  nodes.append(["SINK", "void", "", [i for i in range(n - 1) if i not in users]])
  old_sink = [i for i in range(n * 9 // 10) if not any(s >= n * 9 // 10 for s in nodes[i][3])]
  nodes.append(["SINK", "void", "", old_sink[-50:]])  # the input's root (n + 1 nodes in the trace in all)
  perm = list(range(len(nodes)))
  rng.shuffle(perm)  # new id of old id i: perm[i]
  shuffled = [None] * len(nodes)
  for i, (op, dt, arg, srcs) in enumerate(nodes):
    shuffled[perm[i]] = [op, dt, arg, [perm[s] for s in srcs]]
  step = {"pass": "big", "depth": 0, "in": perm[n], "out": perm[n - 1], "rewrites": 1, "us": 1.0,
          "rules": [{"loc": "x.cpp:1", "count": 1}]}
  return {"version": 1, "program": "big", "nodes": shuffled, "runs": [],
          "contexts": [{"kind": "kernel", "name": "big", "device": "CPU", "steps": [step], "text": {}}]}


def test_page_in_chromium_over_10k_nodes(tmp_path):
  """A 10,000-node graph with sources after their users in id order: laid out and drawn (boxes only, past 3000
  nodes), the new part highlighted, well inside Chromium's time budget."""
  trace = tmp_path / "big.json"
  trace.write_text(json.dumps(big_trace(10_000)))
  dom = check_page_in_chromium(str(trace), ["kernel big", ">big", "10000 nodes", "(labels off)"])
  assert len(re.findall(r'class="node', dom)) == 10_000
  assert 'class="node changed"' in dom
  assert "NaN" not in dom  # every node got a layer: a source's id after its user's must not matter
  assert re.search(r"drawn in \d+ ms", dom)  # (0 ms here: virtual time stops the page's clock)


def test_page_in_chromium_over_a_real_trace(tmp_path):
  """A Python process computes a @ b + c with VIZ=2 (record, write at exit): the page shows its kernel, the
  scheduler's and the codegen's passes, the rules that fired and the C source."""
  trace = tmp_path / "trace.json"
  program = ("from tinygrad_cpp import Tensor\n"
             "a, b, c = Tensor([[1., 2., 3.], [4., 5., 6.]]), Tensor([[1., 0.], [0., 1.], [1., 1.]]), Tensor([10., 20.])\n"
             "print((a @ b + c).tolist())\n")
  env = dict(os.environ, VIZ="2", VIZ_PATH=str(trace), DEV="CPU")
  out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "[[14.0, 25.0], [20.0, 31.0]]"
  t = json.loads(trace.read_text())
  kernels = [c for c in t["contexts"] if c["kind"] == "kernel"]
  assert len(kernels) == 1, [c["name"] for c in t["contexts"]]
  name = kernels[0]["name"]
  realized = [c["text"]["realized"] for c in t["contexts"] if c["kind"] == "schedule" and "realized" in c["text"]]
  assert any("kernel  float[4] on CPU: a tensor the realize asked for" in r for r in realized), realized
  shot = os.environ.get("TG_VIZ_SCREENSHOT") or str(tmp_path / "viz.png")
  dom = check_page_in_chromium(str(trace), [f"kernel {name}", "schedule", ">expand", ">reduce_to_acc", ">linearize", ">render",
                                            "src/codegen/lowerer.cpp:", f"void {name}(", "1. REDUCE_AXIS -&gt;"],
                               screenshot=shot)
  assert 'class="node changed"' in dom
  # linearize's own passes ran inside it: listed after it (recorded before it, as they end first)
  assert dom.index(">linearize ") < dom.index(">reduce_to_acc "), "a nested pass listed before its parent"
  assert os.path.getsize(shot) > 10_000
