#!/usr/bin/env python3
"""Serves the VIZ viewer for a trace written by tinygrad.cpp (VIZ=1 or VIZ=2, src/uop/viz_trace.h).

    python3 python/tinygrad_cpp/viz/serve.py TRACE.json [--port 8000]      (--port 0: any free port)

Only Python's standard library: it runs without the compiled module. It listens on 127.0.0.1 only and answers
loopback clients only (403 for any other address).
"""
import argparse
import http.server
import ipaddress
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STATIC = {"/": ("index.html", "text/html"), "/viz.js": ("viz.js", "text/javascript"), "/viz.css": ("viz.css", "text/css")}


def is_local_client(address: str) -> bool:
    """Whether a client address is a loopback one (127.0.0.0/8 or ::1)."""
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False


def make_handler(trace_path: str):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if not is_local_client(self.client_address[0]):
                return self.send_error(403, "the viewer answers this machine only")
            path = self.path.split("?")[0]
            if path == "/trace.json":
                return self.reply(trace_path, "application/json")
            if path in STATIC:
                name, kind = STATIC[path]
                return self.reply(os.path.join(HERE, name), kind)
            self.send_error(404)

        def reply(self, path: str, kind: str):
            try:
                with open(path, "rb") as f:
                    body = f.read()
            except OSError as e:
                return self.send_error(500, f"cannot read {path}: {e.strerror}")
            self.send_response(200)
            self.send_header("Content-Type", kind + "; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):  # (quiet: one line per request would bury the address)
            pass

    return Handler


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args(argv)
    if not os.path.isfile(args.trace):
        print(f"viz: no trace file {args.trace}", file=sys.stderr)
        return 1
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(os.path.abspath(args.trace)))
    except OSError as e:  # (the port taken, most often: say so in one line, not a traceback)
        print(f"viz: cannot listen on 127.0.0.1:{args.port}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"viz: serving {args.trace} at http://127.0.0.1:{server.server_address[1]}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
