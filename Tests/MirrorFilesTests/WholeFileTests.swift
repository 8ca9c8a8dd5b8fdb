import Foundation
@testable import MirrorFiles
import Testing

@Suite("whole files and the output sink", .timeLimit(.minutes(6)))
struct WholeFileTests {
    @Test("a whole-file write replaces the file and leaves no temporary file")
    func replaces() throws {
        let folder = try TemporaryFolder()
        try folder.write("old bytes", to: "report.json")
        try WholeFile.write(Data("{\"jobs\":2}\n".utf8), to: folder.at("report.json"))
        #expect(try folder.read("report.json") == "{\"jobs\":2}\n")
        #expect(try folder.entries() == ["report.json"])
    }

    @Test("a write whose body fails leaves the earlier file as it was and no temporary file")
    func failedBody() throws {
        struct Stop: Error {}
        let folder = try TemporaryFolder()
        try folder.write("old bytes", to: "out.csv")
        #expect(throws: Stop.self) {
            try WholeFile.write(to: folder.at("out.csv")) { descriptor in
                var sink = OutputSink(descriptor: descriptor)
                sink.write(Array("half a file".utf8))
                try sink.flush()
                throw Stop()
            }
        }
        #expect(try folder.read("out.csv") == "old bytes")
        #expect(try folder.entries() == ["out.csv"])
    }

    @Test("a file in a folder that is not there is refused, with the system's reason")
    func missingFolder() throws {
        let folder = try TemporaryFolder()
        let path = folder.at("gone/out.csv")
        let failure = #expect(throws: WholeFile.Failure.self) { try WholeFile.write(Data("x".utf8), to: path) }
        #expect(failure?.description == "cannot write '\(path)': No such file or directory")
    }

    @Test("the sink writes its bytes in order, and a write that fails is remembered")
    func sink() throws {
        let folder = try TemporaryFolder()
        try WholeFile.write(to: folder.at("lines")) { descriptor in
            var sink = OutputSink(descriptor: descriptor)
            sink.write(Array("a,b".utf8))
            sink.write(byte: 0x0A)
            "1,2\n".utf8.withContiguousStorageIfAvailable { sink.write($0) }
            try sink.flush()
        }
        #expect(try folder.read("lines") == "a,b\n1,2\n")

        var broken = OutputSink(descriptor: -1)
        broken.write(Array("lost".utf8))
        let first = #expect(throws: OutputSink.WriteError.self) { try broken.flush() }
        #expect(first?.description == "Bad file descriptor")
        #expect(broken.failed == "Bad file descriptor")
        let again = #expect(throws: OutputSink.WriteError.self) { try broken.flush() }
        #expect(again?.description == "Bad file descriptor")
    }
}
