import Foundation
import Hummingbird

// serve-floor PORT PREFIX=FOLDER ...
//
// Answers GET PREFIX/NAME with the bytes of FOLDER/NAME, read into memory before it
// listens on 127.0.0.1:PORT: each answer is a dictionary lookup and a buffer already made,
// through Hummingbird's default HTTP/1.1 server and router, on as many event loops as
// cores. No request reads a disk or a database, and no answer is looked up, checked or
// counted as mirror serve's are, so what it costs is the least any server on Hummingbird 2
// spends on a request; other paths get 404.

let arguments = CommandLine.arguments
guard arguments.count >= 3, let port = Int(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: serve-floor PORT PREFIX=FOLDER ...\n".utf8))
    exit(2)
}

var bodies: [String: ByteBuffer] = [:]
for mapping in arguments.dropFirst(2) {
    guard let equals = mapping.firstIndex(of: "=") else {
        FileHandle.standardError.write(Data("serve-floor: '\(mapping)' is not PREFIX=FOLDER\n".utf8))
        exit(2)
    }
    let prefix = String(mapping[..<equals])
    let folder = URL(fileURLWithPath: String(mapping[mapping.index(after: equals)...]))
    guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey]) else {
        FileHandle.standardError.write(Data("serve-floor: cannot list \(folder.path)\n".utf8))
        exit(1)
    }
    for case let file as URL in walker where (try? file.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true {
        let relative = String(file.standardizedFileURL.path.dropFirst(folder.standardizedFileURL.path.count))
        bodies[prefix + relative] = ByteBuffer(bytes: try Data(contentsOf: file))
    }
}
let served = bodies

let router = Router()
router.get("**") { request, _ -> Response in
    guard let body = served[request.uri.path] else { return Response(status: .notFound) }
    return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: ResponseBody(byteBuffer: body))
}
let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "serve-floor"))
print("serve-floor: \(served.count) files on 127.0.0.1:\(port)")
try await app.runService()
