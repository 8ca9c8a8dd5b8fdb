#!/usr/bin/env python3
"""An OTLP/HTTP receiver, for mirror's tests of `run --otlp-endpoint`: it takes what an
OpenTelemetry collector would, decoded with the official protobuf classes of
opentelemetry-proto. Run it with the venv from setup.sh:

    python otlp_server.py [--port 0] [--ignore-stdin]

When ready it prints one JSON line to stdout (then flushes):

    {"port": P, "url": "http://127.0.0.1:P"}

It exits when its standard input reaches end of file (unless --ignore-stdin) or on
SIGTERM/SIGINT.

  POST /v1/traces    an ExportTraceServiceRequest (application/x-protobuf), kept
  POST /v1/metrics   an ExportMetricsServiceRequest, kept
  GET  /received     {"traces": [...], "metrics": [...], "headers": [...]}: each request
                     decoded, as protobuf's json_format writes it (ids in hex, not base64),
                     and the headers each came with

Anything else, or a body that does not decode, is answered 400 and not kept.
"""
import argparse
import base64
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest, ExportMetricsServiceResponse)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)
from stopping import stop_event

KINDS = {
    "/v1/traces": ("traces", ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/metrics": ("metrics", ExportMetricsServiceRequest, ExportMetricsServiceResponse),
}
RECEIVED = {"traces": [], "metrics": [], "headers": []}
LOCK = threading.Lock()


def with_hex(value):
    """json_format writes bytes as base64; trace and span ids read as W3C writes them, in hex."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str):
                out[key] = base64.b64decode(item).hex()
            else:
                out[key] = with_hex(item)
        return out
    if isinstance(value, list):
        return [with_hex(item) for item in value]
    return value


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        kind = KINDS.get(self.path)
        if kind is None or self.headers.get("Content-Type") != "application/x-protobuf":
            self.answer(400, b"not an OTLP/HTTP protobuf export", "text/plain")
            return
        name, request_type, response_type = kind
        message = request_type()
        try:
            message.ParseFromString(body)
        except Exception as error:  # noqa: BLE001 - any decoding failure is the client's
            self.answer(400, ("cannot decode: %s" % error).encode(), "text/plain")
            return
        with LOCK:
            RECEIVED[name].append(with_hex(MessageToDict(message)))
            RECEIVED["headers"].append({key.lower(): value for key, value in self.headers.items()})
        self.answer(200, response_type().SerializeToString(), "application/x-protobuf")

    def do_GET(self):
        if self.path != "/received":
            self.answer(404, b"", "text/plain")
            return
        with LOCK:
            body = json.dumps(RECEIVED).encode()
        self.answer(200, body, "application/json")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ignore-stdin", action="store_true")
    args = parser.parse_args(sys.argv[1:])
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stop = stop_event(watch_stdin=not args.ignore_stdin)
    sys.stdout.write(json.dumps({"port": port, "url": "http://%s:%d" % (args.host, port)}) + "\n")
    sys.stdout.flush()
    while not stop.wait(3600):
        pass
    server.server_close()
    os._exit(0)


if __name__ == "__main__":
    main()
