"""`make run` says which port is taken and how to choose another, before it starts anything (config/port_free.py)."""
import socket

from config.port_free import main


def test_a_taken_port_is_named_with_the_way_to_choose_another(capsys):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert main("127.0.0.1", str(port)) == 1
        assert f"Port {port} on 127.0.0.1 is in use" in capsys.readouterr().err
    assert main("127.0.0.1", str(port)) == 0
