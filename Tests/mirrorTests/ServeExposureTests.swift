import Crypto
import Foundation
import Testing

/// `mirror serve` with `arguments` in `folder`, stopped by SIGTERM once it says where it serves;
/// its exit status and what it printed to stderr.
private func serveUntilListening(_ arguments: [String], in folder: String) async throws -> (Int32, String) {
    let err = folder + "/serve-\(UUID().uuidString).err"
    let child = try Child(mirrorBinary.path, ["serve", "--output", "out", "--port", "0"] + arguments, in: folder,
                          environment: ProcessInfo.processInfo.environment, stderr: err)
    for _ in 0..<2000 {
        let said = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        if said.contains("serving 'out' on ") { break }
        try await Task.sleep(for: .milliseconds(10))
    }
    kill(child.pid, SIGTERM)
    let ending = await child.ending()
    return (ending.status, try String(contentsOfFile: err, encoding: .utf8))
}

@Suite("serve beyond loopback", .timeLimit(.minutes(6)))
struct ServeExposureTests {
    @Test("a bind beyond loopback without --device-tokens or --open is a usage error, exit 2, that names both")
    func beyondLoopbackRefused() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for address in ["0.0.0.0", "::", "192.0.2.7", "128.0.0.1", "::2", "example.com"] {
            let refused = try await mirror(["serve", "--output", "out", "--port", "0", "--bind", address], in: folder,
                                           killAfter: .seconds(20))
            #expect(refused.status == 2, "\(address)")
            #expect(refused.stdout == "")
            #expect(refused.stderr.hasPrefix("""
                Error: --bind \(address) serves beyond this machine, to anyone who can reach it: give --device-tokens FILE \
                to serve each device only its own accounts and tables, or --open to serve every record to every client
                Usage: mirror serve 
                """), "\(refused.stderr)")
        }
    }

    @Test("--tls-cert without --tls-key, or the key alone, is a usage error, exit 2")
    func tlsFilesTogether() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for half in [["--tls-cert", "cert.pem"], ["--tls-key", "key.pem"]] {
            let refused = try await mirror(["serve", "--output", "out", "--port", "0"] + half, in: folder, killAfter: .seconds(20))
            #expect(refused.status == 2)
            #expect(refused.stderr.hasPrefix("""
                Error: --tls-cert and --tls-key go together: give both (the certificate and its key) or neither
                Usage: mirror serve 
                """), "\(refused.stderr)")
        }
    }

    @Test("device-token add prints a new token once and appends its SHA-256; serve beyond loopback with that file starts")
    func tokenAdd() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let added = try await mirror(["device-token", "add", "kiosk-3", "--account", "north", "--table", "t_item",
                                      "--device-tokens", "devices.jsonl"], in: folder, killAfter: .seconds(20))
        #expect(added.status == 0 && added.stderr == "")
        let token = added.stdout.trimmingCharacters(in: .newlines)
        #expect(token.count == 43 && added.stdout == token + "\n")
        let hash = SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(try String(contentsOfFile: folder + "/devices.jsonl", encoding: .utf8)
            == #"{"name":"kiosk-3","sha256":"\#(hash)","accounts":["north"],"tables":["t_item"]}"# + "\n")
        let missing = try await mirror(["device-token", "add", "kiosk-4", "--table", "t_item", "--device-tokens", "devices.jsonl"],
                                       in: folder, killAfter: .seconds(20))
        #expect(missing.status == 2)
        #expect(missing.stderr.hasPrefix("Error: --account is missing: name what the device may read, or '*' for every one\n"))
        let (status, said) = try await serveUntilListening(["--bind", "0.0.0.0", "--device-tokens", "devices.jsonl"], in: folder)
        #expect(status == 0, "\(said)")
        #expect(said.contains("serving 'out' on http://0.0.0.0:"), "\(said)")
        #expect(!said.contains(token))
    }

    @Test("loopback addresses are served as before, and a bind beyond loopback with --open is served on purpose")
    func loopbackAndOpen() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for address in ["127.0.0.1", "127.8.9.10", "localhost", "::1"] {
            let (status, said) = try await serveUntilListening(["--bind", address], in: folder)
            #expect(status == 0, "\(address): \(said)")
            #expect(said.contains("serving 'out' on http://"), "\(address): \(said)")
        }
        let (status, said) = try await serveUntilListening(["--bind", "0.0.0.0", "--open"], in: folder)
        #expect(status == 0, "\(said)")
        #expect(said.contains("serving 'out' on http://0.0.0.0:"), "\(said)")
    }
}
