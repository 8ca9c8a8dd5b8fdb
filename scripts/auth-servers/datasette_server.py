"""Datasette serving a table of numbered rows, for mirror init's test of a real API that
pages by a next URL in its body (`next_url`).

    python datasette_server.py --rows 8

When ready it prints one JSON line to stdout (then flushes):

    {"port": P, "url": "http://127.0.0.1:P", "ids": [1, 2, …]}

The table is `items` of the database `items` (`/items/items.json`): `id INTEGER PRIMARY KEY`
from 1 to --rows, and a `name`. The server stops on SIGTERM, SIGINT or the end of its stdin.
"""
import argparse
import asyncio
import json
import os
import socket
import sqlite3
import sys
import tempfile
import threading

from stopping import stop_event

from datasette.app import Datasette  # noqa: E402
import uvicorn  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=8)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="mirror-datasette-")
    path = os.path.join(folder, "items.db")
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)")
        db.executemany("INSERT INTO items VALUES (?, ?)", [(i, f"n{i}") for i in range(1, args.rows + 1)])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    # Listening before the ready line: a connection waits in the backlog until uvicorn accepts it.
    listener.listen(128)
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(Datasette(files=[path]).app(), log_level="warning", lifespan="off"))
    stop = stop_event()
    threading.Thread(target=lambda: (stop.wait(), setattr(server, "should_exit", True)), daemon=True).start()
    print(json.dumps({"port": port, "url": f"http://127.0.0.1:{port}", "ids": list(range(1, args.rows + 1))}), flush=True)
    asyncio.run(server.serve(sockets=[listener]))
    os.remove(path)
    os.rmdir(folder)
    sys.exit(0)


if __name__ == "__main__":
    main()
