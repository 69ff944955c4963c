import Foundation

/// The page around the data: doctype, inline style, the data as JSON, inline scripts.
///
/// The style and scripts are Swift string constants (`HTMLReportStyle`, `HTMLReportScript`)
/// rather than SwiftPM resources: a resource bundle lives beside the executable and
/// `Bundle.module` stops the program when it is missing, so a `netsim` binary copied on its own
/// (a CI cache, a release archive) would crash writing a report. As constants they are compiled
/// in and the report needs nothing but the binary.
enum HTMLReportPage {
    static func render(_ data: HTMLReportData) -> String {
        """
        <!DOCTYPE html>
        <html lang="en" data-errors="0">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="generator" content="netsim">
        <title>\(escape(data.title)) — netsim report</title>
        <script>\(HTMLReportScript.errorCapture)</script>
        <style>\(HTMLReportStyle.css)</style>
        </head>
        <body>
        <noscript>This report draws itself with JavaScript; the data is in the netsim-data script element.</noscript>
        <div id="app"></div>
        <div id="tip" role="tooltip" hidden></div>
        <script type="application/json" id="netsim-data">\(embeddedJSON(data))</script>
        <script>\(HTMLReportScript.page)</script>
        <script>\(HTMLReportScript.timeline)</script>
        <script>\(HTMLReportScript.start)</script>
        </body>
        </html>

        """
    }

    /// The data as JSON that cannot end its script element: every `<` is written `\u003c`
    /// (JSON's own escape, so `JSON.parse` reads it back unchanged; outside strings JSON has no `<`).
    static func embeddedJSON(_ data: HTMLReportData) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        // Strings, integers and booleans only: encoding cannot fail.
        let json = (try? encoder.encode(data)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return json.replacingOccurrences(of: "<", with: "\\u003c")
    }

    /// Text for HTML content and attribute values.
    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }
}
