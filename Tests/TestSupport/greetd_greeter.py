"""A greeter for greetd 0.9 that plays a script over greetd's IPC (greetd-ipc(7)): each message
is a 4-byte length in native byte order, then that much JSON.

usage: greetd_greeter.py USER STEPS_FILE [LOG]
Creates a session for USER (create_session), acknowledges every info and error message
(post_auth_message_response with no response), and answers each question (a secret or
visible auth message) with the next steps of STEPS_FILE, a JSON list of actions taken in
order until an "answer":
  ["answer", TEXT]              post_auth_message_response with TEXT ("" is Enter alone)
  ["sensor", SOCKET, COMMAND]   one command to libfprint's virtual_device (a finger on the
                                reader while the question is shown)
  ["until", PATH, TEXT]         wait (bounded) until the file PATH contains TEXT
A question with no steps left is answered with cancel_session. Prints one JSON object: every
message greetd sent and each answer ({"type", "text", "at"}: "answered" for an answer;
"at" in monotonic seconds), the final "result" ("success", or the error's description) and
"ok" (false when a step or a wait failed). greetd clears its greeter's environment but for
GREETD_SOCK; standard output is greetd's own. With LOG, each message is also appended to that
file as it comes, one JSON object a line (for a test that acts on a sentence meanwhile, such
as a sign-in code).
"""
import json, os, socket, struct, sys, time

LIMIT = 20.0
user = sys.argv[1]
with open(sys.argv[2]) as file:
    steps = json.load(file)
log_path = sys.argv[3] if len(sys.argv) > 3 else None
messages = []
outcome = {"messages": messages, "result": None, "ok": True}

def send(connection, request):
    payload = json.dumps(request).encode()
    connection.sendall(struct.pack("=I", len(payload)) + payload)

def receive_exactly(connection, count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise EOFError("greetd closed the connection")
        data += chunk
    return data

def receive(connection):
    (length,) = struct.unpack("=I", receive_exactly(connection, 4))
    return json.loads(receive_exactly(connection, length))

def until(path, text):
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        try:
            with open(path, errors="replace") as file:
                if text in file.read():
                    return True
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    return False

def sensor(path, command):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as reader:
        reader.settimeout(LIMIT)
        reader.connect(path)
        reader.sendall(command.encode())
        reader.recv(4096)  # the driver closes the connection once it took the command

def answer_question(connection):
    while steps:
        action = steps.pop(0)
        if action[0] == "answer":
            messages.append({"type": "answered", "text": action[1], "at": time.monotonic()})
            send(connection, {"type": "post_auth_message_response", "response": action[1]})
            return
        if action[0] == "sensor":
            sensor(action[1], action[2])
        elif action[0] == "until":
            if not until(action[1], action[2]):
                outcome["ok"] = False
                messages.append({"type": "greeter", "text": f"{action[1]} never held {action[2]!r}",
                                 "at": time.monotonic()})
    send(connection, {"type": "cancel_session"})

try:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(LIMIT)
        connection.connect(os.environ["GREETD_SOCK"])
        send(connection, {"type": "create_session", "username": user})
        while True:
            response = receive(connection)
            if response["type"] == "auth_message":
                kind = response["auth_message_type"]
                messages.append({"type": kind, "text": response["auth_message"], "at": time.monotonic()})
                if log_path:
                    with open(log_path, "a") as log:
                        log.write(json.dumps(messages[-1]) + "\n")
                if kind in ("secret", "visible"):
                    answer_question(connection)
                else:
                    send(connection, {"type": "post_auth_message_response", "response": None})
            elif response["type"] == "success":
                outcome["result"] = "success"
                break
            else:
                outcome["result"] = response.get("description", "error")
                break
except Exception as error:  # a broken conversation is the test's failure to report, not a crash
    outcome["ok"] = False
    outcome["result"] = f"greeter: {error!r}"
print(json.dumps(outcome), flush=True)
