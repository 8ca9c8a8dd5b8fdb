"""How a test server knows to stop: SIGTERM, SIGINT, or the end of its standard input,
which comes when the test process that started it goes away, however it went."""
import os
import signal
import threading


def stop_event(watch_stdin=True):
    """An event set on SIGTERM or SIGINT and, with watch_stdin, when standard input ends."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if watch_stdin:
        def watch():  # raw reads: a buffered reader's lock would stall the exit
            try:
                while os.read(0, 65536):
                    pass
            except OSError:
                pass
            stop.set()
        threading.Thread(target=watch, daemon=True).start()
    return stop
