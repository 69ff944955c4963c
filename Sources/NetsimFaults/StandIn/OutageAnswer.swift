import Foundation

/// What the relay answers during an outage.
enum OutageAnswer {
    static func response(_ kind: OutageKind, now: Date) -> StandInResponse {
        let date = httpDate(now)
        var status = (200, "OK")
        var headers: [(String, String)] = [("Date", date), ("Server", "netsim-outage")]
        let summary: String
        var body = "Service unavailable\n"
        var declared: Int?
        switch kind {
        case .serviceUnavailable:
            status = (503, "Service Unavailable")
            headers += [("Retry-After", "2"), ("Content-Type", "text/plain")]
            summary = "503 (Retry-After: 2)"
        case .internalError:
            status = (500, "Internal Server Error")
            body = "Internal server error\n"
            headers.append(("Content-Type", "text/plain"))
            summary = "500"
        case .errorPage:
            body = "<html><head><title>Service unavailable</title></head><body><h1>Service unavailable</h1><p>The service is temporarily unavailable. Please try again later.</p></body></html>\n"
            headers += [("Content-Type", "text/html"), ("Last-Modified", httpDate(now.addingTimeInterval(-365 * 86400)))]
            summary = "200 and an error page (Last-Modified a year ago, no Cache-Control)"
        case .truncated, .noHeaders:
            body = String(repeating: "0123456789abcdef", count: 64)  // 1 KiB declared
            declared = body.utf8.count
            body = String(body.prefix(body.count * 3 / 8))
            headers.append(("Content-Type", "application/octet-stream"))
            summary = "200 whose body stops at \(body.utf8.count) of \(declared!) bytes, then FIN"
        }
        return StandInResponse(status: status.0, reason: status.1, headers: headers, body: body, declaredLength: declared, summary: summary)
    }
}

/// An IMF-fixdate (RFC 9110), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
func httpDate(_ date: Date) -> String {
    let seconds = Int(date.timeIntervalSince1970.rounded(.down))
    let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
    let secondOfDay = seconds - days * 86400
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    let weekday = weekdays[((days % 7) + 7) % 7]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    return "\(weekday), \(two(day)) \(months[month - 1]) \(year) \(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
}
