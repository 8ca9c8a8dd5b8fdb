/// Which jobs must run on one machine, and which of N shards each such group goes to:
/// `mirror plan` prints it, `mirror run --shard I/N` walks one shard of it, and the loader
/// checks a file's own `shard:` pins with it. The assignment is a documented function of
/// the jobs' names alone (docs/deploying.md, "Shards"), so every version of mirror, and every pod of
/// a Kubernetes Indexed Job, assigns alike.
import Foundation
package import MirrorModel

package struct ShardPlan: Sendable {
    /// Shard `index` of `count`, written `I/N`.
    package struct Shard: Sendable, Equatable, CustomStringConvertible {
        package let index: Int
        package let count: Int

        /// Nil unless `0 ≤ index < count` and `count` is within `JobLimits.shards`.
        package init?(index: Int, count: Int) {
            guard JobLimits.shards.contains(count), (0..<count).contains(index) else { return nil }
            self.index = index
            self.count = count
        }

        /// `I/N`, both decimal numbers.
        package init?(_ text: String) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, let index = Self.number(parts[0]), let count = Self.number(parts[1]) else { return nil }
            self.init(index: index, count: count)
        }

        /// Digits only: no sign, no spaces.
        package static func number(_ text: Substring) -> Int? {
            guard !text.isEmpty, text.utf8.allSatisfy(\.isASCIIDigit) else { return nil }
            return Int(text)
        }

        package var description: String { "\(index)/\(count)" }

        /// Shard 0 of 1: every job, what a command without `--shard` works on.
        package static let whole = Shard(index: 0, count: 1)!
    }

    /// A job of the plan: its file (an index among the files planned) and its name.
    package struct Job: Sendable, Hashable {
        package let file: Int
        package let name: String
        /// `<file name>/<job name>`: the job file's last path component, so that the key does
        /// not depend on the folder the command was given the file from.
        package let key: String
    }

    /// Jobs that always run together.
    package struct Group: Sendable {
        /// The smallest key of its jobs, byte by byte: what its shard is a hash of.
        package let key: String
        /// Sorted by key, byte by byte: the first is the group's key.
        package let jobs: [Job]
        package let shard: Int
        /// A `shard:` of one of its jobs put it there, not the hash.
        package let pinned: Bool
    }

    /// N.
    package let count: Int
    /// By shard, then by key.
    package let groups: [Group]
    private let shards: [Place: Int]

    private struct Place: Hashable {
        let file: Int
        let name: String
    }

    /// Plans `files` over `count` shards; `output` is the output folder each file's jobs
    /// write to (`--output`, else the file's `output:`, else `cache`). A `shard:` of `count`
    /// or more, and two jobs of one group pinned to different shards, are config errors.
    package init(_ files: [JobFile], shards count: Int, output: (JobFile) -> String) throws(ConfigError) {
        precondition(JobLimits.shards.contains(count), "the count of shards is checked where it is read")
        let folders = files.map { (output($0) as NSString).standardizingPath }
        var diagnostics: [Diagnostic] = []
        var groups: [Group] = []
        for members in Self.groups(files, folders: folders) {
            diagnostics += Self.pinProblems(members, files: files, count: count)
            let jobs = members.map { Job(file: $0.file, name: $0.spec.name, key: Self.key(file: files[$0.file].path, job: $0.spec.name)) }
                .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            let pin = members.lazy.compactMap { $0.spec.shard }.first
            groups.append(Group(key: jobs[0].key, jobs: jobs, shard: pin?.shard ?? Self.shard(key: jobs[0].key, count: count),
                                pinned: pin != nil))
        }
        if !diagnostics.isEmpty { throw ConfigError(diagnostics) }
        self.count = count
        self.groups = groups.sorted { a, b in
            if a.shard != b.shard { return a.shard < b.shard }
            if a.key != b.key { return a.key.utf8.lexicographicallyPrecedes(b.key.utf8) }
            return a.jobs[0].file < b.jobs[0].file
        }
        var shards: [Place: Int] = [:]
        for group in groups {
            for job in group.jobs { shards[Place(file: job.file, name: job.name)] = group.shard }
        }
        self.shards = shards
    }

    /// The shard of job `name` of `files[file]`.
    package func shard(file: Int, job name: String) -> Int? {
        shards[Place(file: file, name: name)]
    }

    /// The groups of shard `index`, by key.
    package func groups(inShard index: Int) -> [Group] {
        groups.filter { $0.shard == index }
    }

    // MARK: The assignment

    /// `<file name>/<job name>`.
    package static func key(file path: String, job name: String) -> String {
        (path as NSString).lastPathComponent + "/" + name
    }

    /// FNV-1a, 64 bits, of the key's UTF-8 bytes, modulo the count of shards.
    package static func shard(key: String, count: Int) -> Int {
        Int(fnv1a(key.utf8) % UInt64(count))
    }

    /// The 64-bit FNV-1a hash: from the offset basis, for each byte: xor it in, multiply
    /// by the FNV prime, modulo 2⁶⁴.
    static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    // MARK: The grouping

    typealias Member = (file: Int, spec: JobSpec)

    /// The jobs of `files` in groups that must run together: a job with its `parent` (a
    /// child and its whole chain of parents), and the jobs of one database file in one
    /// output folder (`database:`; jobs that set `share_table` store into one table of one
    /// database, so they meet there too), closed transitively. Each group in file order;
    /// the groups in the order of their first jobs. `folders` are the files' output
    /// folders, standardized.
    static func groups(_ files: [JobFile], folders: [String]) -> [[Member]] {
        let members: [Member] = files.indices.flatMap { file in files[file].jobs.map { (file, $0) } }
        var leader = Array(members.indices)
        func find(_ index: Int) -> Int {
            var root = index
            while leader[root] != root { root = leader[root] }
            var step = index
            while leader[step] != root { (leader[step], step) = (root, leader[step]) }
            return root
        }
        func union(_ a: Int, _ b: Int) {
            let (rootA, rootB) = (find(a), find(b))
            if rootA != rootB { leader[max(rootA, rootB)] = min(rootA, rootB) }
        }
        var byName: [String: Int] = [:]
        var byDatabase: [String: Int] = [:]
        for (index, member) in members.enumerated() {
            byName["\(member.file)\u{0}\(member.spec.name)"] = index
            let database = folders[member.file] + "\u{0}" + member.spec.database
            if let first = byDatabase[database] { union(first, index) } else { byDatabase[database] = index }
        }
        for (index, member) in members.enumerated() {
            if let parent = member.spec.parent, let other = byName["\(member.file)\u{0}\(parent)"] { union(index, other) }
        }
        var grouped: [Int: [Member]] = [:]
        for index in members.indices { grouped[find(index), default: []].append(members[index]) }
        return grouped.keys.sorted().map { grouped[$0]! }
    }

    /// What is wrong with the `shard:` pins of one group: a pin that differs from the
    /// group's first (in file order), and, once the count of shards is known, a pin past
    /// the last shard; each reported where it is written.
    static func pinProblems(_ group: [Member], files: [JobFile], count: Int?) -> [Diagnostic] {
        let pins = group.compactMap { member in member.spec.shard.map { (member: member, pin: $0) } }
        guard let first = pins.first else { return [] }
        var diagnostics: [Diagnostic] = []
        for (member, pin) in pins {
            func report(_ message: String) {
                diagnostics.append(Diagnostic(file: files[member.file].path, line: pin.line, column: pin.column, message: message))
            }
            if let count, pin.shard >= count {
                let shards = count == 1 ? "there is 1 shard (0)" : "there are \(count) shards (0 to \(count - 1))"
                report("'shard' of job '\(member.spec.name)' is \(pin.shard), but \(shards)")
            }
            if pin.shard != first.pin.shard {
                report("job '\(member.spec.name)' is pinned to shard \(pin.shard), but it runs with job "
                    + "'\(first.member.spec.name)', pinned to shard \(first.pin.shard) at "
                    + "\(files[first.member.file].path):\(first.pin.line):\(first.pin.column): jobs linked by 'parent' or "
                    + "storing into one database file run on one shard; pin them alike")
            }
        }
        return diagnostics
    }
}
