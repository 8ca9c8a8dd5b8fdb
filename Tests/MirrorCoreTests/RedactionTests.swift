import Crypto
import Foundation
import GRDB
@testable import MirrorJobFile
@testable import MirrorJSON
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Synchronization
import Testing

/// `drop:` and `hash:`: personal data taken out of records before anything is stored,
/// run against a fixture API into real files.
@Suite("drop and hash", .timeLimit(.minutes(6)))
struct RedactionTests {
    private static let salt = "pepper-Zq81-salt-value-7731"

    /// `"<hex>"`: what `hash:` stores for a value whose canonical JSON text is `json`.
    private static func hashed(_ json: String) -> String {
        "\"" + Hex.string(SHA256.hash(data: Array(salt.utf8) + [0] + Array(json.utf8))) + "\""
    }

    @Test("a value is written again without the dropped values, every match of a wildcard, a filter and a repeated key, and with the replaced ones")
    func editing() throws {
        let document = try JSONDocument(parsing: Array(
            #"{"a":1,"b":{"c":2,"d":[1,2,3]},"e":[{"k":"x","v":1},{"k":"y","v":2}],"a":3,"f":{"a b":"\u0041\/"}}"#.utf8))
        var out: [UInt8] = []
        document.root.appendEdited(dropping: [JSONPath("a")!, JSONPath("b.d.-1")!, JSONPath("e[k=y].v")!, JSONPath("nowhere.x")!],
                                   replacing: [JSONPath("b.c")!, JSONPath("e.*.k")!, JSONPath("/f/a b")!],
                                   with: { value in
                                       var canonical: [UInt8] = []
                                       value.appendCanonical(to: &canonical)
                                       return Array(JSONText.quoted(String(decoding: canonical, as: UTF8.self)).utf8)
                                   }, to: &out)
        #expect(String(decoding: out, as: UTF8.self)
            == #"{"b":{"c":"2","d":[1,2]},"e":[{"k":"\"x\"","v":1},{"k":"\"y\""}],"f":{"a b":"\"A/\""}}"#)
        // Nothing to do: the text as it was.
        out = []
        document.root.appendEdited(dropping: [JSONPath("zz")!], replacing: [], with: { _ in [] }, to: &out)
        #expect(out == document.bytes)
        #expect(JSONPath("a")!.mayReach(JSONPath("a.b")!) && JSONPath("*.b")!.mayReach(JSONPath("x.b.c")!)
            && JSONPath("l.0")!.mayReach(JSONPath("l.-1")!) && JSONPath("l[k=v]")!.mayReach(JSONPath("l.3.id")!))
        #expect(!JSONPath("a.b")!.mayReach(JSONPath("a")!) && !JSONPath("a.c")!.mayReach(JSONPath("a.b")!))
    }

    @Test("the keys are read, from defaults too; the salt is masked like any secret and is never printed")
    func keys() throws {
        let harness = try Harness()
        let file = try harness.load("""
            version: 1
            defaults:
              drop: phone
            jobs:
              - name: people
                url: "http://127.0.0.1:1/people?page={page}"
                records: data.list
                id: user.id
                table: t_item
                drop: [phone, "/contact/home address", "contacts[type=sms].value", user.ssn]
                hash: { salt: "${MIRROR_SALT}", paths: [email, contacts.*.email] }
                columns:
                  mail: email
              - name: other
                url: "http://127.0.0.1:1/other?page={page}"
                records: data.list
                id: id
                table: t_other
            """, environment: ["MIRROR_SALT": Self.salt])
        let people = file.jobs[0]
        #expect(people.redaction == RecordRedaction(
            drop: [JSONPath("phone")!, JSONPath("/contact/home address")!, JSONPath("contacts[type=sms].value")!, JSONPath("user.ssn")!],
            hash: [JSONPath("email")!, JSONPath("contacts.*.email")!], salt: Array(Self.salt.utf8)))
        #expect(file.jobs[1].redaction == RecordRedaction(drop: [JSONPath("phone")!], hash: [], salt: []))
        #expect(people.redactor.redact("a \(Self.salt) b") == "a REDACTED b")
        let shown = ["\(people.redaction!)", String(reflecting: people.redaction!), { var text = ""; dump(people, to: &text); return text }()]
        #expect(shown[0] == "drop [phone, /contact/home address, contacts[type=sms].value, user.ssn], hash [email, contacts.*.email] with salt REDACTED")
        for text in shown { #expect(!text.contains(Self.salt) && !text.contains("Zq81")) }
    }

    @Test("every problem of drop and hash is reported where it is written, before any request")
    func validation() throws {
        let harness = try Harness()
        let path = harness.folder + "/jobs.yaml"
        func problems(_ yaml: String, environment: [String: String] = ["SALT": Self.salt, "SHORT": "abc"]) -> [String] {
            do {
                _ = try harness.load(yaml, environment: environment)
                return []
            } catch {
                return "\(error)".components(separatedBy: "\n")
            }
        }
        let taken = "must be a dot path such as 'data.list' ('.' for the whole response) or a JSON Pointer such as '/@odata.nextLink'"
        #expect(problems(itemsJob("""
            drop: [id, ".", "a..b", venue, phone]
            hash:
              salt: "${SALT}"
              paths: [phone, email, contact, venue.town]
            columns:
              city: venue.city
              mail: contact.email
              hashed: email
            """, url: "http://127.0.0.1:1/items?page={page}")) == [
            "\(path):9:12: 'drop' path 'id' takes away the job's id ('id'): the id is stored as it is",
            "\(path):9:16: 'drop' cannot be '.': a path names a field of the record, not the record itself",
            "\(path):9:21: 'drop' \(taken), not 'a..b'",
            "\(path):9:29: 'drop' path 'venue' leaves column 'city' ('venue.city') nothing to read: drop the column, or keep the field",
            "\(path):12:15: 'hash.paths' path 'phone' is dropped too ('drop' path 'phone'): a field is dropped or hashed, not both",
            "\(path):12:29: 'hash.paths' path 'contact' leaves column 'mail' ('contact.email') nothing to read: "
                + "a column may hold a hashed value, not a field inside one",
            "\(path):12:38: 'hash.paths' path 'venue.town' is dropped too ('drop' path 'venue'): a field is dropped or hashed, not both",
        ])
        #expect(problems("""
            version: 1
            jobs:
              - { name: a, url: "http://127.0.0.1:1/a", records: ., id: user.id, table: ta, drop: user, hash: { salt: "${SALT}", paths: "*" } }
              - { name: b, url: "http://127.0.0.1:1/b", records: ., id: id, table: tb, hash: { salt: "plain-salt-of-20-bytes", paths: [email] } }
              - { name: c, url: "http://127.0.0.1:1/c", records: ., id: id, table: tc, hash: { salt: "${SHORT}", paths: [email] } }
              - { name: d, url: "http://127.0.0.1:1/d", records: ., id: id, table: td, hash: { salt: "${UNSET}", paths: [email] } }
              - { name: e, url: "http://127.0.0.1:1/e", records: ., id: id, table: te, hash: [email], drop: { a: b } }
              - { name: f, url: "http://127.0.0.1:1/f", records: ., id: id, table: tf, hash: { paths: [email], pepper: x } }
              - { name: g, url: "http://127.0.0.1:1/g", records: ., id: id, table: tg, hash: { salt: "${SALT}" } }
            """) == [
            "\(path):3:87: 'drop' path 'user' takes away the job's id ('user.id'): the id is stored as it is",
            "\(path):3:125: 'hash.paths' path '*' is dropped too ('drop' path 'user'): a field is dropped or hashed, not both",
            "\(path):3:125: 'hash.paths' path '*' hashes the job's id ('user.id'): the id is stored as it is",
            "\(path):4:90: 'hash.salt' must come from an environment variable that 'not_secret' does not list, "
                + "such as \"${MIRROR_SALT}\": the salt is a secret",
            "\(path):5:90: 'hash.salt' must be at least 16 bytes long (check SHORT): "
                + "with a short salt, whoever holds the hashes can hash guesses until one matches",
            "\(path):6:90: environment variable UNSET is not set",
            "\(path):7:82: 'hash' must be a mapping with salt and paths, such as { salt: \"${MIRROR_SALT}\", paths: [email] }",
            "\(path):7:97: 'drop' must be a record path or a list of them, such as [email, contact.phone]",
            "\(path):8:82: 'hash' needs 'salt', a secret from an environment variable such as \"${MIRROR_SALT}\"",
            "\(path):8:100: unknown key 'pepper' in hash",
            "\(path):9:82: 'hash' needs 'paths', the record paths whose values are hashed",
        ])
        #expect(problems("""
            version: 1
            not_secret: [SALT]
            jobs:
              - { name: a, url: "http://127.0.0.1:1/a", records: ., id: id, table: ta, hash: { salt: "${SALT}", paths: [email] } }
            """) == [
            "\(path):4:90: 'hash.salt' must come from an environment variable that 'not_secret' does not list, "
                + "such as \"${MIRROR_SALT}\": the salt is a secret",
        ])
        // The records of one table lose the same fields, hashed with one salt.
        #expect(problems("""
            version: 1
            jobs:
              - { name: a, url: "http://127.0.0.1:1/a", records: ., id: id, table: t, account: x, drop: [phone] }
              - { name: b, url: "http://127.0.0.1:1/b", records: ., id: id, table: t, account: y, drop: [phone] }
              - { name: c, url: "http://127.0.0.1:1/c", records: ., id: id, table: t, account: z, drop: [phone], hash: { salt: "${SALT}", paths: [email] } }
              - { name: d, url: "http://127.0.0.1:1/d", records: ., id: id, table: u, account: x, hash: { salt: "${SALT}", paths: [email] } }
              - { name: e, url: "http://127.0.0.1:1/e", records: ., id: id, table: u, account: y, hash: { salt: "${SALT2}", paths: [email] } }
            """, environment: ["SALT": Self.salt, "SALT2": Self.salt + "2"]) == [
            "\(path):5:72: job 'c' stores into table 't' of t.sqlite, as job 'a' does, with other 'drop' or 'hash' (paths or salt): "
                + "the records of one table lose the same fields, hashed alike",
            "\(path):7:72: job 'e' stores into table 'u' of u.sqlite, as job 'd' does, with other 'drop' or 'hash' (paths or salt): "
                + "the records of one table lose the same fields, hashed alike",
        ])
        // A child job reads its parent's records as stored.
        #expect(problems("""
            version: 1
            jobs:
              - { name: people, url: "http://127.0.0.1:1/p", records: ., id: id, table: tp, drop: [account_no], hash: { salt: "${SALT}", paths: [email] } }
              - { name: orders, url: "http://127.0.0.1:1/o?who={parent.account_no}&mail={parent.email}&id={parent.id}", parent: people, records: ., id: id, table: to }
            """) == [
            "\(path):4:26: '{parent.account_no}' in job 'orders' reads 'account_no' of the records of job 'people', which drops it "
                + "('account_no'): a child job reads its parent's records as they are stored",
            "\(path):4:26: '{parent.email}' in job 'orders' reads 'email' of the records of job 'people', which hashes it "
                + "('email'): a child job reads its parent's records as they are stored",
        ])
    }

    /// The records of the fixture API: Ann twice under one email, the second time written
    /// with an escape; each has a phone, an address and an ssn in a nested object, and
    /// the fields the walk reads (`seq` for the cursor, `updated` for `{since}`, `photo`
    /// for downloads), all dropped or hashed.
    private static func people(base: String, second: Bool) -> [String] {
        [
            #"{"id":"1","name":"Ann","email":"ann@example.com","phone":"\#(second ? "+4755501099" : "+4755501011")","#
                + #""profile":{"address":"Storgata 1","city":"Oslo","ssn":"01017012345"},"seq":101,"#
                + #""updated":"\#(second ? "2024-05-04T10:00:00Z" : "2024-05-01T10:00:00Z")","photo":"\#(base)/files/1.jpg"}"#,
            #"{"id":"2","name":"Bob","email":"\#(second ? "bob@example.net" : "bob@example.org")","phone":"+4755502022","#
                + #""profile":{"address":"Kirkegata 2","city":"Bergen","ssn":"02028054321"},"seq":102,"#
                + #""updated":"2024-05-02T10:00:00Z","photo":"\#(base)/files/2.jpg"}"#,
            #"{"id":"3","name":"Ann again","email":"ann\u0040example.com","phone":"+4755503033","#
                + #""profile":{"address":"Torget 3","city":"Oslo","ssn":"03039067890"},"seq":103,"#
                + #""updated":"2024-05-03T10:00:00Z","photo":"\#(base)/files/3.jpg"}"#,
        ]
    }

    /// What the personal fields of `people` hold, as served: none may be stored anywhere.
    private static let personal = [
        "ann@example.com", #"ann\u0040example.com"#, "bob@example.org", "bob@example.net", "4755501011", "4755501099",
        "4755502022", "4755503033", "Storgata", "Kirkegata", "Torget", "01017012345", "02028054321", "03039067890",
    ]

    @Test("dropped and hashed values reach no byte of the output folder, the feed, a snapshot or a replayed page; the walk still reads them; a change in a dropped field is no change")
    func endToEnd() async throws {
        let harness = try Harness()
        let second = Mutex(false)
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            if request.path.hasPrefix("/files/") {
                return FixtureResponse(headers: [("Content-Type", "image/jpeg")], body: Array("jpeg \(request.path)".utf8))
            }
            // Two records a page, those past the cursor `after` (a record's dropped `seq`).
            let after = Int(request.parameter("after") ?? "") ?? 0
            let all = Self.people(base: request.base, second: second.withLock { $0 })
            let list = Array(all.enumerated().filter { 101 + $0.offset > after }.map(\.element).prefix(2))
            return .json(#"{"data":{"list":[\#(list.joined(separator: ","))]},"meta":{"size":2}}"#)
        }
        let yaml = """
            version: 1
            jobs:
              - name: people
                url: "BASE/people?since={since}&after={cursor}"
                next: { cursor: data.list.-1.seq }
                records: data.list
                id: id
                table: t_item
                incremental: updated
                downloads: photo
                drop: [phone, profile.address, seq, updated, photo]
                hash: { salt: "${MIRROR_SALT}", paths: [email, profile.ssn] }
                columns:
                  email: email
            """
        let environment = ["MIRROR_SALT": Self.salt]
        let ann = Self.hashed(#""ann@example.com""#)
        let stored = [
            #"{"id":"1","name":"Ann","email":\#(ann),"profile":{"city":"Oslo","ssn":\#(Self.hashed(#""01017012345""#))}}"#,
            #"{"id":"2","name":"Bob","email":\#(Self.hashed(#""bob@example.org""#)),"profile":{"city":"Bergen","ssn":\#(Self.hashed(#""02028054321""#))}}"#,
            #"{"id":"3","name":"Ann again","email":\#(ann),"profile":{"city":"Oslo","ssn":\#(Self.hashed(#""03039067890""#))}}"#,
        ]
        var places: [(String, String)] = []
        places.append(("summary 1", try await FixtureServer.with(handler) { server in
            let first = try await harness.run(yaml, server: server, environment: environment)
            #expect(first.jobs[0].error == nil)
            #expect(first.jobs[0].records == .init(new: 3, updated: 0, unchanged: 0, rejected: 0, pruned: 0, deleted: 0))
            // The cursor came from the dropped `seq`, the downloads from the dropped `photo`; no
            // `{since}` yet, so its parameter is left out.
            #expect(server.requests.filter { $0.path == "/people" }.map(\.target)
                == ["/people", "/people?after=102", "/people?after=103"])
            #expect(try harness.typedRows("SELECT url, status FROM _mirror_files ORDER BY url")
                == (1...3).map { ["text:\(server.base)/files/\($0).jpg", "text:ok"] })
            return first.reported
        }))
        #expect(try ["1", "2", "3"].map { try harness.record($0) } == stored)
        // Equal emails join, written with an escape or not; the column holds the hash.
        #expect(try harness.typedRows("SELECT email, count(*) FROM t_item GROUP BY email ORDER BY 2 DESC")
            == [["text:" + ann.dropFirst().dropLast(), "integer:2"], ["text:" + Self.hashed(#""bob@example.org""#).dropFirst().dropLast(), "integer:1"]])

        let feed = try harness.changes(since: 0)
        #expect(feed.lines.map(\.record) == stored)
        places.append(("feed", feed.text))
        try await harness.snapshot("snap")
        #expect(try Harness.rows(harness.folder + "/snap/t_item.sqlite").map { $0[2] } == stored)
        places.append(("replayed page", try await serving(harness) { base in
            let page = try await get(base + "/people")
            #expect(page.status == 200)
            #expect(page.text == #"{"data":{"list":[\#(stored[0]),\#(stored[1])]},"meta":{"size":2}}"#)
            return page.text
        }))

        // The second run: Ann's phone and `updated` changed (dropped: no change), Bob's email (hashed: a change).
        second.withLock { $0 = true }
        places.append(("summary 2", try await FixtureServer.with(handler) { server in
            let run = try await harness.run(yaml, server: server, environment: environment)
            #expect(run.jobs[0].error == nil)
            #expect(run.jobs[0].records == .init(new: 0, updated: 1, unchanged: 2, rejected: 0, pruned: 0, deleted: 0))
            // `{since}` came from the dropped `updated`.
            #expect(server.requests.filter { $0.path == "/people" }.map { $0.parameter("since") } == Array(repeating: "2024-05-03T10:00:00Z", count: 3))
            return run.reported
        }))
        let bob = #"{"id":"2","name":"Bob","email":\#(Self.hashed(#""bob@example.net""#)),"profile":{"city":"Bergen","ssn":\#(Self.hashed(#""02028054321""#))}}"#
        let later = try harness.changes(since: feed.through)
        #expect(later.lines.map(\.id) == ["2"] && later.lines.map(\.record) == [bob])
        places.append(("feed 2", later.text))

        // Every byte under the test's folder (the databases, their WAL if any, the snapshot,
        // the downloaded files), the feeds, the replayed page and the summaries.
        let written = harness.writtenBytes(places)
        #expect(written.contains { $0.place == "cache/t_item.sqlite" } && written.contains { $0.place == "snap/t_item.sqlite" })
        expectNoSecret(Self.personal + [Self.salt], in: written)
        // What the walk kept of the fields it read is its own bookkeeping, as docs/job-files.md says:
        // the cursor and `{since}`, and the files' URLs; the records have none of them.
        #expect(try harness.typedRows("SELECT count(*) FROM t_item WHERE record LIKE '%seq%' OR record LIKE '%updated%' OR record LIKE '%photo%'")
            == [["integer:0"]])
    }
}
