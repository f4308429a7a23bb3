"""prefix_proxy.py - a reverse proxy that serves a service under a path prefix
and strips it, as a gateway mounting text2sqld at /t2s/playground/ does: a
request for PREFIX/rest is forwarded as /rest; anything outside the prefix is
answered 404 by the proxy itself (so a page that asks for an absolute URL
gets nothing).  Bodies are copied as they arrive (server-sent events stream
through), each response ends with its connection.  Test-only, loopback."""

import http.client
import http.server
import threading

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class PrefixProxy:
    def __init__(self, upstream_host, upstream_port, prefix):
        self.prefix = prefix.rstrip("/")
        self.outside = []  # paths asked outside the prefix
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # bodies end with the connection

            def log_message(self, *args):
                pass

            def forward(self):
                if not (self.path == proxy.prefix or self.path.startswith(proxy.prefix + "/")):
                    proxy.outside.append(self.path)
                    self.send_error(404, "outside the proxy's prefix")
                    return
                rest = self.path[len(proxy.prefix):] or "/"
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                conn = http.client.HTTPConnection(upstream_host, upstream_port, timeout=120)
                try:
                    conn.request(self.command, rest, body=body or None, headers=headers)
                    resp = conn.getresponse()
                    self.send_response_only(resp.status, resp.reason)
                    for k, v in resp.getheaders():
                        if k.lower() not in HOP and k.lower() != "content-length":
                            self.send_header(k, v)
                    self.end_headers()
                    while True:
                        chunk = resp.read1(65536)
                        if not chunk:
                            break
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    # The browser went away (the page's Stop aborts a stream): so does the upstream
                    # connection, closed below, as a gateway would.
                    self.close_connection = True
                finally:
                    conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = "http://127.0.0.1:%d%s" % (self.server.server_address[1], self.prefix)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
