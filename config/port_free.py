"""`python -m config.port_free HOST PORT`: exits 1, saying how to choose another port, when the address is taken.

`make run` asks before it starts the database and migrates: gunicorn's own answer to a taken port is `Connection in
use` repeated for half a minute, which names neither the cause (another `make run`, another program) nor the fix."""
import socket
import sys


def port_free(host: str, port: int) -> bool:
    family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds: TIME_WAIT is no owner
        try:
            probe.bind(address)
        except OSError:
            return False
    return True


def main(host: str, port: str) -> int:
    if port_free(host, int(port)):
        return 0
    print(f"Port {port} on {host} is in use (another `make run`, or another program). Choose another: "
          f"PORT={int(port) + 123} make run", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
