"""Real ingresses in front of tokengate's decision endpoint, each on its own config, prefix and
127.0.0.1 port: Debian's nginx (auth_request, in Debian's build) and Debian's Caddy 2.6
(forward_auth). The packages' own services play no part: each process is started here with
its own config file and stopped by its pid.

  Nginx(tokengate_port, upstream_port, secret=None).start()   docs/decision-mode.md's auth_request recipe
  Caddy(tokengate_port, upstream_port, secret=None).start()   docs/decision-mode.md's forward_auth recipe
  x.url(path), x.stop(), x.log()
"""
import os
import signal
import subprocess
import tempfile
import socket

from .authserver.server import free_port
from .waiting import wait_for

IDENTITY = ("X-Forwarded-User", "X-Forwarded-Email", "X-Forwarded-Groups", "X-Forwarded-Jkt")


def wait_port(port, proc, what, log):
    def listening():
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited: {log()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            return False
    wait_for(listening, 10, interval=0.05, what=lambda: f"{what} to listen: {log()}")


class Process:
    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


NGINX_CONF = """
{user}
worker_processes 1;
daemon off;
error_log {dir}/error.log info;
pid {dir}/nginx.pid;
events {{ worker_connections 512; }}
http {{
  access_log {dir}/access.log;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  upstream tokengate {{ server 127.0.0.1:{tg}; keepalive 16; }}
  upstream app {{ server 127.0.0.1:{app}; keepalive 16; }}
  server {{
    listen 127.0.0.1:{port};
    # The verdict: the original request described in headers, no body. internal: a client
    # asking for /_tokengate/auth itself gets nginx's 404.
    location = /_tokengate/auth {{
      internal;
      proxy_pass http://tokengate/_tokengate/auth;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URL $scheme://$http_host$request_uri;
      proxy_set_header X-Original-Method $request_method;
      proxy_set_header X-Request-Id $request_id;
{secret}
    }}
    # tokengate's other decision endpoints (Traefik/Caddy, Envoy) are not nginx's to expose.
    location /_tokengate/ {{ return 404; }}
    # The login round trip: tokengate's own endpoints, proxied.
    location /oauth2/ {{
      proxy_pass http://tokengate;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $http_host;
    }}
    location @login {{ return 302 $tg_login; }}
    # Browser pages: no session → 401 from the verdict → the login URL it names.
    location /app/ {{
      auth_request /_tokengate/auth;
      auth_request_set $tg_login $upstream_http_x_auth_login_url;
      error_page 401 = @login;
{copy}
      proxy_pass http://app;
    }}
    # APIs: the verdict's 401/403 and WWW-Authenticate reach the client.
    location / {{
      auth_request /_tokengate/auth;
{copy}
      proxy_pass http://app;
    }}
  }}
}}
"""

# Every identity header is set from the verdict (an empty value: nginx sends no header), so a
# client's own copy is overwritten or dropped.
NGINX_COPY = "\n".join(
    f"      auth_request_set $tg_{i} $upstream_http_{h.lower().replace('-', '_')};\n"
    f"      proxy_set_header {h} $tg_{i};" for i, h in enumerate(IDENTITY)) + """
      # RFC 9449 §8: a nonce the verdict issues (401 use_dpop_nonce, or a fresh one on 200)
      # reaches the client; nginx itself copies only WWW-Authenticate from a 401.
      auth_request_set $tg_nonce $upstream_http_dpop_nonce;
      add_header DPoP-Nonce $tg_nonce always;
      # What proxy mode strips, the ingress strips: the gateway's cookies (the verdict's
      # X-Tokengate-Cookie has the rest; empty: no Cookie), credentials these routes do not
      # forward, and the override headers a client may have sent.
      auth_request_set $tg_cookie $upstream_http_x_tokengate_cookie;
      proxy_set_header Cookie $tg_cookie;
      proxy_set_header Authorization "";
      proxy_set_header DPoP "";
      proxy_set_header X-Original-URL "";
      proxy_set_header X-Original-Method "";
      proxy_set_header X-Rewrite-URL "";
      proxy_set_header X-Forwarded-Uri "";
      proxy_set_header X-Forwarded-Method "";
      proxy_http_version 1.1;
      proxy_set_header Connection "";"""


class Nginx(Process):
    def __init__(self, tokengate_port, upstream_port, secret=None):
        self.dir = tempfile.mkdtemp(prefix="tg-nginx-")
        secret_line = f'      proxy_set_header X-Tokengate-Decision-Secret "{secret}";' if secret else ""
        self.port = free_port()
        self.conf = os.path.join(self.dir, "nginx.conf")
        user = "user root;" if os.geteuid() == 0 else ""
        with open(self.conf, "w") as f:
            f.write(NGINX_CONF.format(user=user, dir=self.dir, tg=tokengate_port, app=upstream_port, port=self.port, copy=NGINX_COPY,
                                    secret=secret_line))
        self.proc = None

    def start(self):
        self.out = open(os.path.join(self.dir, "out.log"), "wb")
        self.proc = subprocess.Popen(["nginx", "-p", self.dir, "-c", self.conf], stdout=self.out, stderr=subprocess.STDOUT)
        wait_port(self.port, self.proc, "nginx", self.log)
        return self

    def log(self):
        text = ""
        for name in ("out.log", "error.log"):
            p = os.path.join(self.dir, name)
            if os.path.exists(p):
                text += open(p, errors="replace").read()
        return text


CADDYFILE = """
{{
  admin off
  auto_https off
  storage file_system {dir}/data
}}
http://127.0.0.1:{port} {{
  # In this order (a route keeps it): a client's own copies of the identity headers go first
  # (forward_auth's copy_headers sets only those the verdict has), then the verdict.
  route {{
    # The decision endpoints are the ingress's alone.
    respond /_tokengate/* 404
    # The login round trip: tokengate's own endpoints.
    reverse_proxy /oauth2/* 127.0.0.1:{tg}
    request_header -X-Forwarded-User
    request_header -X-Forwarded-Email
    request_header -X-Forwarded-Groups
    request_header -X-Forwarded-Jkt
    forward_auth 127.0.0.1:{tg} {{
      uri /_tokengate/forward-auth
{secret}
      # The request's cookies without the gateway's own (the sealed session): the verdict's.
      copy_headers X-Forwarded-User X-Forwarded-Email X-Forwarded-Groups X-Forwarded-Jkt X-Tokengate-Cookie>Cookie
    }}
    # What proxy mode strips, the ingress strips: override headers a client sent (forward_auth
    # passes them on), credentials these routes do not forward, the gateway's own cookies.
    request_header -X-Original-URL
    request_header -X-Original-Method
    request_header -X-Rewrite-URL
    request_header -Authorization
    request_header -DPoP
    reverse_proxy 127.0.0.1:{app}
  }}
}}
"""


class Caddy(Process):
    def __init__(self, tokengate_port, upstream_port, strip_spoofed=True, secret=None):
        self.dir = tempfile.mkdtemp(prefix="tg-caddy-")
        self.port = free_port()
        self.conf = os.path.join(self.dir, "Caddyfile")
        secret_line = f"      header_up X-Tokengate-Decision-Secret {secret}" if secret else ""
        text = CADDYFILE.format(dir=self.dir, tg=tokengate_port, app=upstream_port, port=self.port, secret=secret_line)
        if not strip_spoofed:
            text = "\n".join(line for line in text.splitlines() if "request_header -" not in line)
        with open(self.conf, "w") as f:
            f.write(text)
        self.proc = None

    def start(self):
        self.out = open(os.path.join(self.dir, "out.log"), "wb")
        env = dict(os.environ, HOME=self.dir, XDG_DATA_HOME=self.dir, XDG_CONFIG_HOME=self.dir)
        self.proc = subprocess.Popen(["caddy", "run", "--config", self.conf, "--adapter", "caddyfile"],
                                     stdout=self.out, stderr=subprocess.STDOUT, env=env)
        wait_port(self.port, self.proc, "caddy", self.log)
        return self

    def log(self):
        return open(os.path.join(self.dir, "out.log"), errors="replace").read()
