import MirrorJSON
import MirrorModel
import Yams

/// `parent`: a job walked once per record of another job of the same file.
extension JobFileReader {
    /// `parent`: the name of the parent job (checked against the file's jobs once all are read).
    mutating func readParent(_ job: JobNodes) -> String? {
        guard let node = job.keys[.parent]?.value, let text = string(node, key: "parent") else { return nil }
        guard text.secrets.isEmpty else {
            error(node, "'parent' of \(job.label) must name a job of this file, not a variable")
            return nil
        }
        return text.value
    }

    /// A job's `parent` names another job of the file, no job is its own ancestor, a child
    /// uses `{parent.<path>}` and only a child does, and a child is not incremental. Each
    /// parent learns its children.
    mutating func linkParents(_ jobs: inout [JobSpec], nodes: [String: Node]) {
        let names = Set(jobs.map(\.name))
        let redactions = Dictionary(jobs.map { ($0.name, $0.redaction) }, uniquingKeysWith: { first, _ in first })
        func node(_ job: JobSpec, _ key: JobKey) -> Node? {
            nodes[job.name].map { mapping($0, keys: JobKey.self, context: nil, report: false) }?[key]?.value
        }
        var parents: [String: String] = [:]
        for job in jobs {
            let placeholders = job.parentPlaceholders
            guard let parent = job.parent else {
                if let path = placeholders.first {
                    error(node(job, .url) ?? nodes[job.name], "job '\(job.name)' uses {parent.\(path)} but has no 'parent'")
                }
                continue
            }
            guard names.contains(parent), parent != job.name else {
                let hint = closestKey(to: parent, in: names.filter { $0 != job.name }.sorted()).map { " (did you mean '\($0)'?)" } ?? ""
                error(node(job, .parent), parent == job.name ? "job '\(job.name)' cannot be its own parent"
                    : "'parent' of job '\(job.name)' names no job of this file: '\(parent)'\(hint)")
                continue
            }
            if placeholders.isEmpty {
                error(node(job, .parent), "job '\(job.name)' has a parent but no {parent.<path>} in its url, body or headers "
                    + "(such as {parent.id}): every parent would give the same request")
            }
            for path in placeholders where JSONPath(path) == nil {
                error(node(job, .url) ?? nodes[job.name], "'{parent.\(path)}' in job '\(job.name)' is not a path such as {parent.id}")
            }
            // A child reads its parent's record as stored: without what `drop` and `hash` took.
            if let redaction = redactions[parent] ?? nil {
                for text in placeholders {
                    guard let path = JSONPath(text), let taken = redaction.covering(path) else { continue }
                    error(node(job, .url) ?? nodes[job.name], "'{parent.\(text)}' in job '\(job.name)' reads '\(path)' of the "
                        + "records of job '\(parent)', which \(taken.hashes ? "hashes" : "drops") it ('\(taken.path)'): "
                        + "a child job reads its parent's records as they are stored")
                }
            }
            if job.shareTable {
                error(node(job, .shareTable), "'share_table' cannot go with 'parent' in job '\(job.name)': a child job "
                    + "deletes the records of parents that are gone, which in a shared table would be another job's")
            }
            if job.incremental != nil {
                error(node(job, .incremental), "'incremental' cannot go with 'parent' in job '\(job.name)': "
                    + "each parent's children are walked whole")
            }
            parents[job.name] = parent
        }
        // A chain of parents that comes back to where it started. A job met on an earlier
        // chain leads nowhere new: each job is walked past once.
        var reported: Set<String> = []
        var walked: Set<String> = []
        for job in jobs {
            var chain = [job.name]
            var places = [job.name: 0]
            var current = job.name
            while !walked.contains(current), let parent = parents[current] {
                if let start = places[parent] {
                    let cycle = Array(chain[start...])
                    if reported.isDisjoint(with: cycle), let first = jobs.first(where: { cycle.contains($0.name) }) {
                        error(node(first, .parent), "jobs \(cycle.map { "'\($0)'" }.joined(separator: ", ")) are each "
                            + "other's parents: a cycle (\((cycle + [cycle[0]]).joined(separator: " → ")))")
                        reported.formUnion(cycle)
                    }
                    break
                }
                places[parent] = chain.count
                chain.append(parent)
                current = parent
            }
            walked.formUnion(chain)
        }
        var children: [String: [String]] = [:]
        for job in jobs {
            if let parent = parents[job.name] { children[parent, default: []].append(job.name) }
        }
        for index in jobs.indices {
            jobs[index].children = children[jobs[index].name] ?? []
        }
    }
}
