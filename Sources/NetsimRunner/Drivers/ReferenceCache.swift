import Foundation
import NIOConcurrencyHelpers

/// The reference clients' in-memory response cache: URL → response until it goes stale. Which
/// responses go in, and for how long, is each client's policy (``NaiveDriver``,
/// ``ResilientDriver``).
final class ResponseCache: Sendable {
    private struct Entry {
        var response: RawResponse
        var expires: ContinuousClock.Instant
    }

    private let entries = NIOLockedValueBox<[String: Entry]>([:])

    private func fresh(_ url: String) -> RawResponse? {
        entries.withLockedValue { entries in
            guard let entry = entries[url] else { return nil }
            if entry.expires <= .now {
                entries[url] = nil
                return nil
            }
            return entry.response
        }
    }

    /// The fresh response for `url` as the client's answer, marked as served from its cache.
    func answer(_ url: String) -> DriverResponse? {
        fresh(url).map {
            ResponseBuilder.response(status: $0.status, headers: $0.headers, body: $0.body, localPort: nil, fromClientCache: true)
        }
    }

    func store(_ url: String, _ response: RawResponse, for lifetime: Duration) {
        guard lifetime > .zero else { return }
        entries.withLockedValue { $0[url] = Entry(response: response, expires: .now + lifetime) }
    }

    /// Seconds of `max-age` in a Cache-Control value, if any.
    static func maxAge(_ cacheControl: String) -> Int? {
        for directive in cacheControl.lowercased().split(separator: ",") {
            let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == "max-age" { return Int(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\" "))) }
        }
        return nil
    }

    static func forbids(_ cacheControl: String) -> Bool {
        let value = cacheControl.lowercased()
        return value.contains("no-store") || value.contains("no-cache") || value.contains("private")
    }

    /// An HTTP-date (RFC 9110 IMF-fixdate).
    static func date(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}
