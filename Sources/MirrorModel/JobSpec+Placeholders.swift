/// `{since}` and `{parent.<path>}`: placeholders whose values are known once per walk,
/// filled into a job's URL, body and headers before the walk starts. `{page}` and
/// `{cursor}` change from request to request and are filled as each is made.
import Foundation
import MirrorJSON

extension JobSpec {
    /// The job with `{name}` filled in with `value` everywhere a request is built from:
    /// percent-encoded in the URL; in the body, a string that is exactly `"{name}"`
    /// becomes `value` (a number when it is one), and inside other strings it is put in
    /// place; as it is in headers. With no value (an empty one), a query parameter or a
    /// body member whose value is exactly `{name}` is left out, and elsewhere the
    /// placeholder is removed.
    package func filling(_ name: String, with value: SinceValue?) -> JobSpec {
        var job = self
        let placeholder = "{\(name)}"
        // Requests told apart by a header alone share their URL and body: no stored copy
        // of one stands for another.
        if headers.contains(where: { $0.value.real.contains(placeholder) }) { job.headersFilled = true }
        if name == "since" { job.since = value }
        job.url = url.filling(placeholder, with: value?.text ?? "")
        if let body { job.body = body.filling(placeholder, with: value) }
        job.headers = headers.map { header in
            Header(name: header.name,
                   value: RedactedText(real: header.value.real.replacingAll(placeholder, with: value?.text ?? ""),
                                       redactor: redactor))
        }
        return job
    }

    /// The job with one request in flight at a time: a child job's walk of one parent.
    package var oneRequestAtATime: JobSpec {
        var job = self
        job.concurrency = 1
        return job
    }

    /// The `{parent.<path>}` placeholders of the URL, body and headers, by path, in the
    /// order they first appear.
    package var parentPlaceholders: [String] {
        var found: [String] = []
        for text in [url.real, body?.json ?? ""] + headers.map(\.value.real) {
            var rest = Substring(text)
            while let open = rest.range(of: "{parent.") {
                guard let close = rest[open.upperBound...].firstIndex(of: "}") else { break }
                let path = String(rest[open.upperBound ..< close])
                if !found.contains(path) { found.append(path) }
                rest = rest[rest.index(after: close)...]
            }
        }
        return found
    }
}

extension RequestTemplate {
    /// The template with `placeholder` filled in with `text`, percent-encoded; a query
    /// parameter whose value is exactly `placeholder` is left out when `text` is empty.
    package func filling(_ placeholder: String, with text: String) -> RequestTemplate {
        func fill(_ template: String) -> String {
            let template = text.isEmpty ? Self.withoutParameters(valued: placeholder, in: template) : template
            return template.replacingAll(placeholder, with: text.addingPercentEncodingForQuery())
        }
        return RequestTemplate(real: fill(real), shown: fill(shown))
    }
}

extension BodyTemplate {
    /// The template with `placeholder` filled in with `value` (see `JobSpec.filling`).
    package func filling(_ placeholder: String, with value: SinceValue?) -> BodyTemplate {
        let renderer = Renderer(values: [.init(placeholder: placeholder, text: value?.text ?? "", isNumber: value?.isNumber ?? false)])
        func fill(_ template: String) -> String {
            guard let document = try? JSONDocument(parsing: Array(template.utf8)) else { return renderer.filled(template) }
            var out: [UInt8] = []
            renderer.json(document.root, into: &out)
            return String(decoding: out, as: UTF8.self)
        }
        return BodyTemplate(json: fill(json), description: fill(description), form: form)
    }
}
