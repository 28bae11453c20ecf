#!/usr/bin/env python3
"""A stand-in inference engine for stepgate's tests under a real `nsys` (tests/it/real_nsys.rs).

It runs no model. It emits the NVTX step ranges the real engines emit, with their exact
names and domains (docs/engines.md, docs/steps.md), through the `nvtx` PyPI package, and
logs what it emitted (one JSON object per line) so a test can check what stepgate found
against what was really there.

    engine.py emit  --engine vllm|sglang|trtllm|tensorrt --steps N --log FILE
        Emit N engine steps on the main thread and exit. `tensorrt`: each step an
        `enqueue` range holding per-layer ranges in the NVTX domain `TensorRT` (as
        TensorRT's profiler names them, `TensorRT:layer_k` in nsys), then two start/end
        `request` ranges: one ended on a second thread, one on the thread that started it.
    engine.py serve --engine vllm|sglang --port P --log FILE [engine flags ...]
        An HTTP server with the engine's routes: vLLM /health, /v1/models,
        /v1/completions, /start_profile, /stop_profile; SGLang /ready, /model_info,
        /generate, /start_profile, /stop_profile. /start_profile and /stop_profile call
        cuProfilerStart/cuProfilerStop through ctypes where libcuda loads (what opens and
        closes an `nsys -c cudaProfilerApi` capture range) and log what they returned.
        Each completion runs one step range. Other arguments (e.g.
        --profiler-config.profiler=cuda) are accepted and ignored, as a real command
        line's would be by this stand-in.

Only the standard library and `nvtx` are used. Every log line carries pid and tid (the
kernel's thread id, which is what nsys records), so the test matches rows exactly.
"""

import argparse
import ctypes
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import nvtx

TRTLLM_DOMAIN = "TensorRT-LLM"
TENSORRT_DOMAIN = "TensorRT"
TENSORRT_LAYERS = 3
STEP_SECONDS = 0.004


class Log:
    """One JSON object per line, flushed at once (nsys may SIGINT us at any moment)."""

    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8")
        self.lock = threading.Lock()

    def write(self, **rec):
        rec.setdefault("pid", os.getpid())
        rec.setdefault("tid", threading.get_native_id())
        with self.lock:
            self.f.write(json.dumps(rec) + "\n")
            self.f.flush()


def emit_range(log, name, domain=None, seconds=STEP_SECONDS, **fields):
    """One NVTX push/pop range around a sleep (the step's host time), logged."""
    t0 = time.perf_counter_ns()
    nvtx.push_range(name, domain=domain)
    time.sleep(seconds)
    nvtx.pop_range(domain=domain)
    dur = time.perf_counter_ns() - t0
    log.write(event="range", name=name, domain=domain, dur_ns=dur, **fields)


# ---- the schedules: the batch each step runs, as the engine's scheduler would report it


def vllm_schedule(n):
    """vLLM's detailed step names (`--profiler-config.detailed_trace_annotation=true`):
    one prefill of two 16-token prompts, then decodes of both, with a 8-token prompt
    joining as a mixed step half-way. Per group: sq = Σ query_len, sk = Σ seq_len,
    sqsq = Σ query_len², sqsk = Σ query_len·seq_len (vllm/v1/utils.py)."""
    seqs = []  # per running request: tokens computed so far
    steps = []
    for i in range(n):
        ctx, gen = [], []  # (query_len, seq_len)
        if i == 0:
            ctx = [(16, 16), (16, 16)]
        else:
            gen = [(1, s + 1) for s in seqs]
            if i == n // 2:
                ctx = [(8, 8)]
        seqs = [s for (_, s) in gen] + [s for (_, s) in ctx]

        def agg(group):
            return {
                "requests": len(group),
                "sq": sum(q for q, _ in group),
                "sk": sum(s for _, s in group),
                "sqsq": sum(q * q for q, _ in group),
                "sqsk": sum(q * s for q, s in group),
            }

        c, g = agg(ctx), agg(gen)
        part = lambda a: f"{a['requests']}(sq{a['sq']}sk{a['sk']}sqsq{a['sqsq']}sqsk{a['sqsk']})"
        name = f"execute_{c['sq'] + g['sq']}_context_{part(c)}_generation_{part(g)}"
        kind = "mixed" if ctx and gen else ("prefill" if ctx else "decode")
        steps.append({"name": name, "kind": kind, "context": c, "generation": g})
    return steps


def trtllm_schedule(n, first_iter=10):
    """TensorRT-LLM PyExecutor's `[Executor] _forward_step {iter}: {n} ctx reqs, {t} ctx
    tokens, {m} gen reqs` (tensorrt_llm/_torch/pyexecutor/py_executor.py): one context
    step of two 16-token prompts, then generation steps of both."""
    steps = []
    for i in range(n):
        it = first_iter + i
        ctx, toks, gen = (2, 32, 0) if i == 0 else (0, 0, 2)
        steps.append(
            {
                "name": f"[Executor] _forward_step {it}: {ctx} ctx reqs, {toks} ctx tokens, {gen} gen reqs",
                "kind": "prefill" if ctx else "decode",
                "iteration": it,
                "context": {"requests": ctx, "sq": toks},
                "generation": {"requests": gen},
            }
        )
    return steps


SGLANG_STAGES = ["recv_requests", "get_next_batch_to_run", "run_batch", "process_batch_result"]


def emit(engine, n, log):
    if engine == "vllm":
        for s in vllm_schedule(n):
            emit_range(log, s["name"], step=True, **{k: v for k, v in s.items() if k != "name"})
    elif engine == "trtllm":
        for s in trtllm_schedule(n):
            emit_range(log, s["name"], TRTLLM_DOMAIN, step=True, **{k: v for k, v in s.items() if k != "name"})
    elif engine == "tensorrt":
        emit_tensorrt(n, log)
    elif engine == "sglang":
        # SGLANG_ENABLE_NVTX_SCHEDULER=1: every scheduler stage is an NVTX range in the
        # default domain (sglang/srt/utils/nvtx_utils.py); run_batch is the step.
        for _ in range(n):
            for stage in SGLANG_STAGES:
                secs = STEP_SECONDS if stage == "run_batch" else STEP_SECONDS / 4
                emit_range(log, f"scheduler.{stage}", seconds=secs, step=stage == "run_batch")
    else:
        raise SystemExit(f"unknown engine {engine}")


def emit_tensorrt(n, log):
    """Per-layer ranges in the TensorRT domain inside each step, and start/end ranges, one
    ended on another thread (nsys records that thread as the range's endGlobalTid)."""
    for i in range(n):
        t0 = time.perf_counter_ns()
        nvtx.push_range("enqueue")
        for k in range(TENSORRT_LAYERS):
            name = f"layer_{k}"
            with nvtx.annotate(name, domain=TENSORRT_DOMAIN):
                time.sleep(STEP_SECONDS)
            log.write(event="range", name=name, domain=TENSORRT_DOMAIN, layer=True)
        nvtx.pop_range()
        log.write(event="range", name="enqueue", domain=None, step=True,
                  dur_ns=time.perf_counter_ns() - t0)
    for elsewhere in (True, False):
        name = "request_ended_elsewhere" if elsewhere else "request_ended_here"
        rid = nvtx.start_range(name)
        time.sleep(STEP_SECONDS)
        ender = {}
        if elsewhere:
            def end():
                ender["tid"] = threading.get_native_id()
                nvtx.end_range(rid)
            t = threading.Thread(target=end)
            t.start()
            t.join()
        else:
            ender["tid"] = threading.get_native_id()
            nvtx.end_range(rid)
        log.write(event="range", name=name, domain=None, start_end=True, ended_on=ender["tid"])


# ---- the HTTP server


class Cuda:
    """cuProfilerStart/Stop through the driver API, where libcuda loads. The calls need a
    current context, and each HTTP handler runs on a thread of its own, so the one context
    made at start is made current before each call. Without a usable GPU cuInit fails
    (CUDA_ERROR_NO_DEVICE, 100) and both calls return CUDA_ERROR_NOT_INITIALIZED (3): nsys's
    capture range then never opens."""

    def __init__(self):
        self.ctx = ctypes.c_void_p()
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            self.lib, self.init = None, None
            return
        self.init = self.lib.cuInit(0)
        dev = ctypes.c_int()
        if self.init == 0 and self.lib.cuDeviceGet(ctypes.byref(dev), 0) == 0:
            self.lib.cuCtxCreate_v2(ctypes.byref(self.ctx), 0, dev)

    def call(self, name):
        if self.lib is None:
            return None
        if self.ctx:
            self.lib.cuCtxSetCurrent(self.ctx)
        return getattr(self.lib, name)()


def serve(engine, port, log):
    cuda = Cuda()
    log.write(event="up", engine=engine, port=port, pgid=os.getpgrp(), cu_init=cuda.init)
    state = {"armed": False, "step": 0}
    lock = threading.Lock()
    routes_get = {
        "vllm": {"/health": "", "/v1/models": json.dumps({"object": "list", "data": [{"id": "standin/model"}]})},
        "sglang": {"/ready": "", "/model_info": json.dumps({"model_path": "standin/model"})},
    }[engine]
    generate = {"vllm": "/v1/completions", "sglang": "/generate"}[engine]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, code, body=""):
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n).decode() if n else ""

        def do_GET(self):
            log.write(event="request", method="GET", path=self.path)
            if self.path in routes_get:
                return self.answer(200, routes_get[self.path])
            if engine == "sglang" and self.path in ("/start_profile", "/stop_profile"):
                return self.profile(self.path, "")
            self.answer(404, '{"detail":"Not Found"}')

        def do_POST(self):
            body = self.body()
            log.write(event="request", method="POST", path=self.path, body=body)
            if self.path in ("/start_profile", "/stop_profile"):
                return self.profile(self.path, body)
            if self.path == generate:
                with lock:
                    state["step"] += 1
                    i = state["step"]
                name = vllm_schedule(2)[1]["name"] if engine == "vllm" else "scheduler.run_batch"
                emit_range(log, name, step=True, serial=i)
                return self.answer(200, '{"choices":[{"text":" 1 2 3"}]}' if engine == "vllm" else '{"text":" 1 2 3"}')
            self.answer(404, '{"detail":"Not Found"}')

        def profile(self, path, body):
            start = path == "/start_profile"
            with lock:
                if start and state["armed"]:
                    return self.answer(409, '{"error":"A profiling session is already active."}')
                state["armed"] = start
            rc = cuda.call("cuProfilerStart" if start else "cuProfilerStop")
            log.write(event="profiler", start=start, returned=rc, body=body)
            text = "Start profiling.\n" if start else "Stop profiling. This will take some time.\n"
            self.answer(200, text if engine == "sglang" else "")

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    try:
        server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        # nsys passes on the SIGINT stepgate sends its process group.
        log.write(event="down", why="SIGINT")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    e = sub.add_parser("emit")
    e.add_argument("--engine", required=True, choices=["vllm", "sglang", "trtllm", "tensorrt"])
    e.add_argument("--steps", type=int, default=6)
    e.add_argument("--log", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--engine", required=True, choices=["vllm", "sglang"])
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--log", required=True)
    args, _engine_flags = ap.parse_known_args()
    log = Log(args.log)
    if args.mode == "emit":
        log.write(event="up", engine=args.engine, pgid=os.getpgrp())
        emit(args.engine, args.steps, log)
        log.write(event="done")
    else:
        serve(args.engine, args.port, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
