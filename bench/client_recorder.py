#!/usr/bin/env python3
"""Benchmark of the Python client's buffered recorder (clients/python, agentbilling.Recorder).

Two figures:
- hand-off: how many `record(...)` calls per second the caller's thread makes (each checks the record, gives
  it an idempotency key and appends it to the buffer), while the senders drain the buffer in the background;
- delivery: records per second from the first `record()` to the end of `flush()`, every record answered by
  the server, in batches of 100.

Against a local fake that answers every batch at once (started here, in its own process, so that it does not
share the recorder's interpreter), the figure is the recorder's own ceiling:

  bench/client_recorder.py --records 200000

Against a running service (`make run`), the figure is what the recorder sustains end to end there:

  bench/client_recorder.py --url http://127.0.0.1:8000 --key svc_sk_test_... --records 100000 --senders 4

Records look like the ingestion benchmark's (bench/ingest.py): an LLM call on one of three catalog models,
500 customers, 3 agents, 5 signals, a small metadata object.
"""
import argparse
import asyncio
import multiprocessing
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "python" / "src"))
from agentbilling import Recorder  # noqa: E402

MODELS = [("gpt-4o", "openai"), ("gpt-4o-mini", "openai"), ("claude-3-5-sonnet-20241022", "anthropic")]
ANSWER = (b'{"processed":100,"successful":100,"failed":0,"results":{"success":[],"failed":[]}}')


def fake_server(port_queue):
    """An HTTP/1.1 server answering every request at once with a usage-record answer (keep-alive)."""

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(ANSWER)).encode() + b"\r\n\r\n" + ANSWER)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port_queue.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(url: str, key: str, records: int, senders: int, max_buffer: int) -> dict:
    failures = []
    recorder = Recorder(key, base_url=url, senders=senders, max_buffer=max_buffer, flush_interval=1.0,
                        on_failure=failures.append)
    recorder.record(customerExternalId="warm-up", agentCode="bench-agent-0", signalName="bench-signal-0",
                    model="gpt-4o-mini", modelProvider="openai", inputTokens=1)
    recorder.flush(60)
    start_cpu, start = cpu_seconds(), time.perf_counter()
    for i in range(records):
        model, provider = MODELS[i % 3]
        recorder.record(customerExternalId=f"bench-customer-{i % 500}", agentCode=f"bench-agent-{i % 3}",
                        signalName=f"bench-signal-{i % 5}", model=model, modelProvider=provider,
                        inputTokens=1000 + i % 100, outputTokens=200 + i % 50, metadata={"bench": True})
    handed_off = time.perf_counter()
    assert recorder.flush(600), "not everything was sent"
    done = time.perf_counter()
    cpu = cpu_seconds() - start_cpu
    stats = recorder.stats
    recorder.close()
    return {"records": records, "hand_off_per_s": records / (handed_off - start),
            "delivered_per_s": records / (done - start), "seconds": done - start,
            "cpu_us_per_record": cpu / records * 1e6, "dropped": stats.dropped, "failed": len(failures),
            "retries": stats.retries}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running service (default: a local fake answering at once)")
    parser.add_argument("--key", default=os.environ.get("AGENTBILLING_API_KEY", "svc_sk_test_bench"))
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--max-buffer", type=int, default=1_000_000,
                        help="large by default so that hand-off is measured, not the drop policy")
    args = parser.parse_args()
    server = None
    url = args.url
    if url is None:
        ports = multiprocessing.Queue()
        server = multiprocessing.Process(target=fake_server, args=(ports,), daemon=True)
        server.start()
        url = f"http://127.0.0.1:{ports.get(timeout=30)}"
    try:
        result = run(url, args.key, args.records, args.senders, args.max_buffer)
    finally:
        if server is not None:
            server.terminate()
    target = "a local fake answering at once" if args.url is None else args.url
    print(f"{result['records']} records to {target}, {args.senders} senders: "
          f"hand-off {result['hand_off_per_s']:,.0f} records/s, delivered {result['delivered_per_s']:,.0f} "
          f"records/s ({result['seconds']:.1f} s), recorder process CPU {result['cpu_us_per_record']:.1f} us "
          f"a record; dropped {result['dropped']}, failed {result['failed']}, retries {result['retries']}")


if __name__ == "__main__":
    main()
