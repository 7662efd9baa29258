"""Runs NousResearch's hermes-agent gateway (`hermes gateway run`) against the bench's fakes.

Started by `cargo bench --bench gateway -- --compare` with the venv's python. Reads:
  HERMES_HOME          its state directory (config.yaml is written here)
  BENCH_TELEGRAM_URL   the fake Telegram Bot API (http://127.0.0.1:PORT)
  BENCH_LLM_URL        the fake OpenAI-compatible endpoint (http://127.0.0.1:PORT/v1)
  TELEGRAM_BOT_TOKEN, OPENAI_API_KEY

Configuration is hermes-agent's own, no patching: `platforms.telegram.extra.base_url` (handed
to python-telegram-bot's `base_url`) and a `custom` model provider with `base_url`. Two guards
are added around it, and are the only changes to its behaviour:
  * a loopback-only network guard: name lookups and connections to anything but 127.0.0.1/::1
    fail at once (nothing may leave this machine; without it hermes-agent would try DNS-over-HTTPS
    to discover Telegram IPs, fetch model metadata, ...);
  * HERMES_TELEGRAM_DISABLE_FALLBACK_IPS=1: Telegram fallback IPs make no sense against a local
    fake (their DNS-over-HTTPS discovery still runs at start and fails at once on the guard).
"""

import ipaddress
import os
import socket
import sys

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "ip6-localhost"}


def _is_loopback(host):
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode()
    host = str(host).strip("[]")
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_getaddrinfo = socket.getaddrinfo


def _guarded_getaddrinfo(host, *args, **kwargs):
    if not _is_loopback(host):
        raise socket.gaierror(socket.EAI_NONAME, f"bench: no network beyond loopback ({host})")
    return _getaddrinfo(host, *args, **kwargs)


def _check(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
        raise ConnectionRefusedError(f"bench: no network beyond loopback ({address[0]})")


_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _guarded_connect(self, address):
    _check(self, address)
    return _connect(self, address)


def _guarded_connect_ex(self, address):
    _check(self, address)
    return _connect_ex(self, address)


socket.getaddrinfo = _guarded_getaddrinfo
socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex


def write_config(home):
    tg = os.environ["BENCH_TELEGRAM_URL"].rstrip("/")
    llm = os.environ["BENCH_LLM_URL"].rstrip("/")
    config = f"""# Written by benches/hermes-agent/run.py
model:
  provider: custom
  default: test-model
  base_url: {llm}
  api_key: {os.environ.get("OPENAI_API_KEY", "sk-test-key")}
platforms:
  telegram:
    enabled: true
    extra:
      base_url: {tg}/bot
      base_file_url: {tg}/file/bot
"""
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config.yaml"), "w") as f:
        f.write(config)


def main():
    home = os.environ["HERMES_HOME"]
    write_config(home)
    os.environ.setdefault("GATEWAY_ALLOW_ALL_USERS", "true")
    os.environ.setdefault("HERMES_TELEGRAM_DISABLE_FALLBACK_IPS", "1")
    from hermes_cli.main import main as hermes_main

    sys.argv = ["hermes", "gateway", "run", "--replace"]
    sys.exit(hermes_main())


if __name__ == "__main__":
    main()
