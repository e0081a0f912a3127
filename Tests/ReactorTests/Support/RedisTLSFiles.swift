import Foundation
import TestSupport

/// Throwaway PKI for one TLS test, made with the openssl command-line tool in a fresh
/// directory (removed at the end): a CA, a server certificate it signs for IP 127.0.0.1 and
/// DNS name localhost, and a second, unrelated CA that must not be trusted for it.
final class RedisTLSFiles {
    let directory: URL
    var caFile: String { path("ca.crt") }
    var otherCAFile: String { path("other-ca.crt") }
    var certFile: String { path("server.crt") }
    var keyFile: String { path("server.key") }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokengate-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try makeCA("ca", name: "tokengate test CA")
        try makeCA("other-ca", name: "tokengate other CA")
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=redis-test"
        ])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        try openssl([
            "x509", "-req", "-in", path("server.csr"), "-CA", caFile, "-CAkey", path("ca.key"),
            "-CAcreateserial", "-out", certFile, "-days", "1", "-extfile", path("server.ext")
        ])
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// redis-server arguments for TLS only (no plain port) on `port`; clients need no
    /// certificate.
    func serverArguments(port: UInt16) -> [String] {
        RedisServerProcess.standardArguments(port: port) + [
            "--port", "0", "--tls-port", String(port), "--tls-cert-file", certFile, "--tls-key-file", keyFile,
            "--tls-ca-cert-file", caFile, "--tls-auth-clients", "no"
        ]
    }

    private func makeCA(_ name: String, name subject: String) throws {
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path("\(name).key"), "-out", path("\(name).crt"), "-days", "1", "-subj", "/CN=\(subject)",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"
        ])
    }

    private func openssl(_ arguments: [String]) throws {
        try ProcessRunner.run("/usr/bin/openssl", arguments, timeout: 20)
    }

    private func path(_ file: String) -> String { directory.appendingPathComponent(file).path }
}
