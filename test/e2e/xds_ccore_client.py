"""A real gRPC C-core xDS client for test/e2e/xds-ccore.test.ts.

Run with Debian's /usr/bin/python3 and its python3-grpcio (C-core 1.51): resolves the target
(`xds:///greeter`) through the bootstrap file named by GRPC_XDS_BOOTSTRAP and calls the test
greeter (`/registry.test.Greeter/SayHello`, raw bytes: each server answers its own name) every
few milliseconds, writing one JSON line per call to stdout: `{"ms": <epoch ms>, "name": ...}`
or `{"ms": ..., "error": <status>}`. It stops, exiting 0, once the stop file exists or after
the longest run given; a crash (SIGSEGV in ring_hash, grpc/grpc#31766) shows as a signal.

usage: xds_ccore_client.py TARGET STOP_FILE MAX_SECONDS
"""
import json
import os
import sys
import time

import grpc


def main() -> int:
    target, stop_file, max_seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    channel = grpc.insecure_channel(target)
    hello = channel.unary_unary('/registry.test.Greeter/SayHello')
    deadline = time.monotonic() + max_seconds
    while time.monotonic() < deadline and not os.path.exists(stop_file):
        line = {'ms': int(time.time() * 1000)}
        try:
            line['name'] = hello(b'hi', timeout=2).decode()
        except grpc.RpcError as error:
            line['error'] = error.code().name
            time.sleep(0.05)
        print(json.dumps(line), flush=True)
        time.sleep(0.005)
    channel.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
