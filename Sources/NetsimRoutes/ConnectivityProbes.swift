/// What an open network answers to the connectivity probes operating systems and browsers send
/// to detect a captive portal. The built-in server answers them (unless a scenario route takes
/// the path), so a client that probes sees "no portal" once a `portal` fault lifts — and the
/// portal's answer while it acts.
public enum ConnectivityProbes {
    public static let routes: [HTTPRoute] = [
        // Apple (captive.apple.com): the page the Captive Network Assistant looks for.
        HTTPRoute(path: "/hotspot-detect.html", headers: [HTTPHeader("Content-Type", "text/html")],
                  body: .text("<HTML><HEAD><TITLE>Success</TITLE></HEAD><BODY>Success</BODY></HTML>\n")),
        HTTPRoute(path: "/library/test/success.html", headers: [HTTPHeader("Content-Type", "text/html")],
                  body: .text("<HTML><HEAD><TITLE>Success</TITLE></HEAD><BODY>Success</BODY></HTML>\n")),
        // Android and Chromium (connectivitycheck.gstatic.com).
        HTTPRoute(path: "/generate_204", status: 204),
        HTTPRoute(path: "/gen_204", status: 204),
        // Firefox (detectportal.firefox.com).
        HTTPRoute(path: "/success.txt", headers: [HTTPHeader("Content-Type", "text/plain")], body: .text("success\n")),
        HTTPRoute(path: "/canonical.html", headers: [HTTPHeader("Content-Type", "text/html")],
                  body: .text("<meta http-equiv=\"refresh\" content=\"0;url=https://support.mozilla.org/kb/captive-portal\"/>")),
        // Windows NCSI (www.msftconnecttest.com).
        HTTPRoute(path: "/connecttest.txt", headers: [HTTPHeader("Content-Type", "text/plain")], body: .text("Microsoft Connect Test")),
        HTTPRoute(path: "/ncsi.txt", headers: [HTTPHeader("Content-Type", "text/plain")], body: .text("Microsoft NCSI")),
    ]
}
