import Foundation

/// A line read from an exec client's stdout, sorted out: `hello`, an answer, or a line that
/// breaks the protocol — with what is wrong with it, for the client's log and, when the line
/// names a request, for that request's outcome (rather than leaving it to time out).
enum ExecReply: Equatable {
    case hello(ExecHello)
    /// A line of type `hello` that does not decode: the client will not greet any better, so
    /// the run ends at once rather than at the hello timeout (QA 47: it waited the full 20 s).
    case malformedHello(problem: String)
    case answer(ExecAnswer)
    case unreadable(problem: String, id: Int?)

    static func parse(_ line: Data) -> ExecReply {
        let decoder = JSONDecoder()
        guard let envelope = try? decoder.decode(Envelope.self, from: line) else {
            return .unreadable(problem: "not a JSON object on stdout", id: nil)
        }
        if envelope.type == "hello" {
            do {
                return .hello(try decoder.decode(ExecHello.self, from: line))
            } catch {
                return .malformedHello(problem: "a malformed hello on stdout (\(misfitInteger(in: line, among: ["protocol"]) ?? describe(error)))")
            }
        }
        guard let id = envelope.id else {
            return .unreadable(problem: "a line without an integer \"id\" on stdout, ignored", id: nil)
        }
        do {
            let answer = try decoder.decode(ExecAnswer.self, from: line)
            // A status no server sends passed as a success (QA 50: -5, 0, 70000).
            if let status = answer.status, !(100...599).contains(status) {
                return .unreadable(problem: "a malformed answer on stdout (\"status\" \(status) is not an HTTP status, 100 to 599)", id: id)
            }
            return .answer(answer)
        } catch {
            let integers = ["status", "body_length", "local_port"]
            return .unreadable(problem: "a malformed answer on stdout (\(misfitInteger(in: line, among: integers) ?? describe(error)))", id: id)
        }
    }

    /// `type` and `id`, read leniently: decoding fails only when the line is not a JSON object.
    private struct Envelope: Decodable {
        var type: String?
        var id: Int?

        enum CodingKeys: String, CodingKey { case type, id }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            type = try? container.decodeIfPresent(String.self, forKey: .type)
            id = try? container.decodeIfPresent(Int.self, forKey: .id)
        }
    }

    /// The integer field holding a number that is not one (1.5, or 10^20, beyond 64 bits): valid
    /// JSON, for which Foundation says only "The given data was not valid JSON.", with no field
    /// (QA 49).
    static func misfitInteger(in line: Data, among fields: [String]) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else { return nil }
        for field in fields {
            guard let number = object[field] as? NSNumber, !(number is Bool) else { continue }
            if Int(exactly: number.doubleValue) == nil { return "\"\(field)\" is not an integer" }
        }
        return nil
    }

    /// A decoding error as a person reads it: `"status" is not an integer`.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func field(_ context: DecodingError.Context) -> String {
            "\"" + context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".") + "\""
        }
        switch error {
        case .typeMismatch(let type, let context): return "\(field(context)) is not \(kind(type))"
        case .valueNotFound(let type, let context): return "\(field(context)) is null, not \(kind(type))"
        case .keyNotFound(let key, _): return "\"\(key.stringValue)\" is missing"
        case .dataCorrupted(let context): return context.debugDescription
        @unknown default: return "\(error)"
        }
    }

    private static func kind(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type: "an integer"
        case is Double.Type: "a number"
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        default: type is any Collection.Type ? "an object" : "\(type)"
        }
    }
}
