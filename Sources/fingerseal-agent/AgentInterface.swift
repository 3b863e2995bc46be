/// The agent's D-Bus interface, version 1: the one definition. The agent exports it as it is,
/// and `fingerseal-agent --print-interface` writes it for `make install`
/// (/usr/share/dbus-1/interfaces/org.fingerseal.Agent1.xml) and for fingerseal-agent(8).
enum AgentInterface {
    static let busName = "org.fingerseal.Agent1"
    static let path = "/org/fingerseal/Agent1"
    static let name = "org.fingerseal.Agent1"
    static let request = "org.fingerseal.Agent1.Request"
    static let version: UInt32 = 1

    static let xml = """
<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<!--
  fingerseal-agent's interface, version 1: finger unlock and step-up for applications.
  Bus name org.fingerseal.Agent1 on the session bus, object /org/fingerseal/Agent1.
  Described in fingerseal-agent(8). Unlock, StepUp and Reveal answer at once with a request
  object (org.fingerseal.Agent1.Request), which sends Status signals while it runs and one
  Response at the end, to the caller only. Secrets never travel as strings: a token or a
  plaintext is taken from the request with Take() as a file descriptor, a PIN or password is
  given with Answer() as one.
-->
<node>
  <interface name="org.fingerseal.Agent1">
    <!-- What can answer now: methods (as: finger, pin, password), fingers (as), reader (s:
         present, absent, lid-closed, unknown), signed_in (b), bound (b: the sign-in is bound
         to this computer, its tokens DPoP: see MakeProof), remote (b), tpm (b), display
         (b: the agent can show its dialog), version (u). -->
    <method name="GetCapabilities">
      <arg type="a{sv}" name="capabilities" direction="out"/>
    </method>
    <!-- For a settings page: vault (b), enabled (b: fingerprint unlock is on), enabled_since
         (x, Unix time), last_verified (x, absent when never), fingers (as: as people say them,
         in the person's language), sentences (a{sv} of s: enabled, enabled_since,
         last_verified, fingers, password: each fact as a sentence in the person's language
         and time zone, ready to show and to announce). -->
    <method name="GetStatus">
      <arg type="a{sv}" name="status" direction="out"/>
    </method>
    <!-- The settings switch: fingerprint unlock on or off, confirmed with a finger or the PIN
         (with it off, the PIN) in the agent's dialog or the application's (a request, as
         Unlock). Options: methods, prompt, parent_window, app_name, reason, handle_token. -->
    <method name="SetEnabled">
      <arg type="b" name="enabled" direction="in"/>
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="o" name="handle" direction="out"/>
    </method>
    <!-- A finger, else the fallback, then a fresh access token (Take). Options: methods (as),
         prompt (s: dialog or app), parent_window (s), app_name (s), reason (s: a sentence
         shown beneath the heading), handle_token (s). -->
    <method name="Unlock">
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="o" name="handle" direction="out"/>
    </method>
    <!-- A confirmation for context (an identifier, never shown), kept for this application
         until EndContext, until it leaves the bus, or the administrator's ceiling. reason: a
         sentence shown beneath the heading (or empty). Options: max_age (u, seconds: a
         confirmation held that old or younger answers without a prompt), fresh (b), methods,
         prompt, parent_window, app_name, reason, handle_token. -->
    <method name="StepUp">
      <arg type="s" name="context" direction="in"/>
      <arg type="s" name="reason" direction="in"/>
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="o" name="handle" direction="out"/>
    </method>
    <!-- The plaintext of a file sealed with `fingerseal seal --context CONTEXT`, after a
         confirmation for its context (Take). Options: as for StepUp, and label (s: what the
         data is called, for the title "Meander: show LABEL"). -->
    <method name="Reveal">
      <arg type="h" name="sealed" direction="in"/>
      <arg type="s" name="context" direction="in"/>
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="o" name="handle" direction="out"/>
    </method>
    <!-- The same three, for a caller that cannot follow a request object (a gdbus or busctl
         command line): the reply comes when the request ends, with its Response's code and
         results and, for Unlock and Reveal, the secret's descriptor (an empty one when
         there is none). RevealAndWait takes the sealed file's bytes (ciphertext, no secret),
         for callers that cannot pass a descriptor. Call them with a timeout long enough for
         a person to answer. -->
    <method name="UnlockAndWait">
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="u" name="code" direction="out"/>
      <arg type="a{sv}" name="results" direction="out"/>
      <arg type="h" name="secret" direction="out"/>
    </method>
    <method name="StepUpAndWait">
      <arg type="s" name="context" direction="in"/>
      <arg type="s" name="reason" direction="in"/>
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="u" name="code" direction="out"/>
      <arg type="a{sv}" name="results" direction="out"/>
    </method>
    <method name="RevealAndWait">
      <arg type="ay" name="sealed" direction="in"/>
      <arg type="s" name="context" direction="in"/>
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="u" name="code" direction="out"/>
      <arg type="a{sv}" name="results" direction="out"/>
      <arg type="h" name="secret" direction="out"/>
    </method>
    <!-- A proof of possession (RFC 9449) for one request with the access token Unlock gave,
         when its Response said token_type DPoP: put it in the request's DPoP header, beside
         "Authorization: DPoP TOKEN". method (s: GET, POST, ...), url (s: http or https).
         Options: nonce (s: the server's DPoP-Nonce). No prompt and no finger while that
         token is valid; without one, or for a Bearer token, Error.Failed with a sentence.
         The key never leaves the fingerseal service. -->
    <method name="MakeProof">
      <arg type="s" name="method" direction="in"/>
      <arg type="s" name="url" direction="in"/>
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="s" name="proof" direction="out"/>
    </method>
    <!-- The application navigated away: its confirmation for context ends now. -->
    <method name="EndContext">
      <arg type="s" name="context" direction="in"/>
    </method>
    <property name="Version" type="u" access="read"/>
  </interface>
  <interface name="org.fingerseal.Agent1.Request">
    <!-- The PIN or the account password the request asks for (state needs-pin or
         needs-password), written to the descriptor (a pipe or a file; a trailing newline is
         dropped). For prompt=app; the agent's own dialog takes it itself. -->
    <method name="Answer">
      <arg type="h" name="secret" direction="in"/>
    </method>
    <!-- Skip to the account password (the dialog's "Use password instead"), where the
         application allowed it and the password is not asked already. -->
    <method name="UsePassword"/>
    <!-- While the password is asked (needs-password) and the account has a PIN: skip to
         the PIN (the dialog's "Use PIN instead"). Nothing is counted. -->
    <method name="UsePIN"/>
    <!-- Ends the request; nothing is counted, nothing is revealed. -->
    <method name="Cancel"/>
    <!-- After a successful Response with "take" true: the token or plaintext, once. -->
    <method name="Take">
      <arg type="h" name="secret" direction="out"/>
    </method>
    <!-- state: waiting-for-finger, retry, no-match, locked, needs-pin, needs-password,
         checking. sentence: what to show or speak, in the person's language. -->
    <signal name="Status">
      <arg type="s" name="state"/>
      <arg type="s" name="sentence"/>
    </signal>
    <!-- code: 0 success, 1 cancelled, 2 failed. results: outcome (s), sentence (s), method
         (s: finger, pin, password, held), take (b), expires_at (x, Unix time), token_type
         (s: Bearer or DPoP, with a token to take; DPoP: each request needs MakeProof). -->
    <signal name="Response">
      <arg type="u" name="code"/>
      <arg type="a{sv}" name="results"/>
    </signal>
  </interface>
</node>
"""
}
