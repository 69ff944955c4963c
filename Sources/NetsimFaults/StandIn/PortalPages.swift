/// The captive portal's pages. They are the files in `Fixtures/portal/`, byte for byte (a test
/// holds them equal), compiled in so the `netsim` binary needs no files beside it.
enum PortalPages {
    /// The login page: what `portal=page` answers to every plain-HTTP request, and what the
    /// login URL serves in both modes.
    static let login = """
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Guest Wi-Fi - Sign in</title>
<style>
body { font-family: -apple-system, "Segoe UI", Roboto, sans-serif; background: #f2f4f7; margin: 0; }
main { max-width: 420px; margin: 10vh auto; background: #fff; padding: 2em; border-radius: 8px; }
h1 { font-size: 1.4em; margin-top: 0; }
label, input, button { display: block; width: 100%; margin: 0.5em 0; }
button { background: #0a58ca; color: #fff; border: 0; padding: 0.8em; border-radius: 4px; }
small { color: #667; }
</style>
</head>
<body>
<main>
<h1>Welcome to Guest Wi-Fi</h1>
<p>Sign in to get online. Access is free for 24 hours.</p>
<form method="post" action="http://portal.netsim.test/login">
<label for="room">Room number</label>
<input id="room" name="room" autocomplete="off" required>
<label for="name">Last name</label>
<input id="name" name="name" autocomplete="family-name" required>
<label><input type="checkbox" name="terms" value="accepted" required> I accept the terms of use</label>
<button type="submit">Connect</button>
</form>
<p><small>This is netsim's simulated captive portal. Until the scenario's <code>login</code> step, plain HTTP gets this page (or a redirect to it) and HTTPS is broken, as on a real hotel, airport or cafe network.</small></p>
</main>
</body>
</html>

"""

    /// What a form submission to the login URL gets.
    static let loginAccepted = """
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Guest Wi-Fi - Connecting</title>
</head>
<body>
<main>
<h1>Thank you</h1>
<p>You will be online in a moment.</p>
<p><small>netsim's simulated captive portal does not log anyone in from this form: the scenario's <code>login</code> step (or removing the <code>portal</code> fault) lets the client through.</small></p>
</main>
</body>
</html>

"""
}
