import FingersealCore
import FoundationEssentials
import Glibc
import IdentityClient
import LoopbackKit
import SystemKit

extension Commands {
    static let browserPages: RedirectReceiver.Pages = (received: Messages.browserPageReceived,
                                                       failed: Messages.browserPageFailed,
                                                       ignored: Messages.browserPageIgnored)

    /// RFC 8252: authorization code with PKCE in a browser, which comes back to a one-request
    /// listener on 127.0.0.1; bounded by --timeout, cancelled by Ctrl-C.
    static func browserFlow(_ client: OAuthClient, scope: String, _ arguments: ParsedArguments,
                            _ context: Context) throws -> TokenSet {
        let seconds = try arguments.integer("--timeout") ?? 300
        guard (1...86_400).contains(seconds) else {
            throw FingersealError(.usage, "The option --timeout takes 1 to 86400 seconds.")
        }
        let port = try arguments.integer("--redirect-port") ?? 0
        guard port == 0 || (1024...65535).contains(port) else {
            throw FingersealError(.usage, "The option --redirect-port takes a port from 1024 to 65535.")
        }
        let request = try AuthorizationRequest()
        // Before the listener's thread starts: it inherits the blocked signals, so Ctrl-C
        // reaches the signalfd and not that thread.
        let interrupt = try InterruptWatch()
        let receiver: RedirectReceiver
        do {
            receiver = try RedirectReceiver(port: UInt16(port), state: request.state, pages: browserPages)
        } catch let error as SystemError where error.code == EADDRINUSE {
            throw FingersealError(.unavailable, Messages.redirectPortBusy(port))
        } catch {
            throw FingersealError(.systemError, Messages.systemFailure("listen for the browser on 127.0.0.1"),
                                  detail: "\(error)")
        }
        let url = try client.authorizationURL(request, scope: scope, redirectURI: receiver.redirectURI)
        try showAuthorizationURL(url, json: arguments.has("--json"), context)
        let opener = arguments.has("--no-browser") ? nil : openInBrowser(url, context)
        context.output.note(Messages.waitingForSignIn)
        let parameters = try withExtendedLifetime(opener) { try waitForRedirect(receiver, interrupt, seconds: seconds) }
        receiver.stop()

        let response = AuthorizationResponse(parameters)
        switch response {
        case let .code(code):
            do throws(TokenFailure) {
                return try client.exchangeCode(code, redirectURI: receiver.redirectURI, verifier: request.pkce.verifier)
            } catch {
                // invalid_grant here: the code expired, was used, or the verifier did not match.
                if case .chainEnded = error { throw FingersealError(.noMatch, Messages.codeNotAccepted) }
                throw error
            }
        case .refused:
            throw loginError(.accessDenied)
        case let .failed(error):
            throw FingersealError(response.isTransient ? .unavailable : .badConfiguration,
                                  Messages.providerProblem("it ended the sign-in with the error \(error)"))
        case .malformed:
            throw FingersealError(.unavailable, Messages.providerProblem("it sent the browser back with neither a code nor an error"))
        }
    }

    static func showAuthorizationURL(_ url: String, json: Bool, _ context: Context) throws {
        guard json else {
            context.output.out(Messages.openInBrowser)
            context.output.out(url)
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        context.output.out(String(decoding: try encoder.encode(["authorization_url": url]), as: UTF8.self))
    }

    /// Starts xdg-open when there is one on PATH and a display for it. Never fails the
    /// sign-in: the address is printed anyway. The caller keeps the process until it is done.
    static func openInBrowser(_ url: String, _ context: Context) -> Subprocess? {
        guard context.environment["DISPLAY"] != nil || context.environment["WAYLAND_DISPLAY"] != nil else { return nil }
        // Absolute PATH entries only: an empty or relative one would mean the current directory.
        let directories = (context.environment["PATH"] ?? "").split(separator: ":").filter { $0.hasPrefix("/") }
        guard let opener = directories.map({ String($0) + "/xdg-open" }).first(where: { access($0, X_OK) == 0 }) else { return nil }
        return try? Subprocess(path: opener, arguments: [url], environment: environmentEntries())
    }

    /// The redirect's parameters once its page has been sent; every wait is bounded.
    static func waitForRedirect(_ receiver: RedirectReceiver, _ interrupt: InterruptWatch,
                                seconds: Int) throws -> [String: String] {
        let deadline = monotonicSeconds() + Double(seconds)
        while true {
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else { throw FingersealError(.timedOut, Messages.browserTimedOut) }
            var fds = [pollfd(fd: interrupt.fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: receiver.readyFD, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, Int32((min(remaining, 60) * 1000).rounded(.up)))
            if fds[0].revents != 0 && interrupt.fired() { throw FingersealError(.cancelled, Messages.cancelled) }
            if fds[1].revents != 0, let parameters = receiver.redirect() { return parameters }
        }
    }
}
