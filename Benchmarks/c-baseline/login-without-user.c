/* A login host that starts PAM with no user name, as login(1) on a console and LightDM do:
 * pam_start_confdir(SERVICE, NULL, ...) from a private service directory, PAM_TTY set (a
 * person is there), then pam_authenticate. Each message of the conversation is printed as
 * one line as it comes ("info: ...", "error: ...", "prompt: ..."), a prompt is answered with
 * nothing, and the end is "result: CODE USER". For the identify benchmark; not part of the
 * product.
 *
 *   login-without-user SERVICE-DIR SERVICE [USER]
 *
 * With USER, it starts with that user name instead (the baseline: a verify). Run it on a
 * terminal it leads, as login on a console is: the module then offers Ctrl-C, not a question.
 */
#include <security/pam_appl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int converse(int count, const struct pam_message **messages, struct pam_response **responses, void *data) {
    (void)data;
    struct pam_response *answers = calloc((size_t)count, sizeof *answers);
    if (answers == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < count; i++) {
        const char *text = messages[i]->msg ? messages[i]->msg : "";
        switch (messages[i]->msg_style) {
        case PAM_TEXT_INFO: printf("info: %s\n", text); break;
        case PAM_ERROR_MSG: printf("error: %s\n", text); break;
        default:
            /* A user name or a password: this host has none to give. */
            printf("prompt: %s\n", text);
            fflush(stdout);
            free(answers);
            return PAM_CONV_ERR;
        }
    }
    fflush(stdout);
    *responses = answers;
    return PAM_SUCCESS;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: login-without-user SERVICE-DIR SERVICE [USER]\n");
        return 2;
    }
    struct pam_conv conversation = { converse, NULL };
    pam_handle_t *pam = NULL;
    int rc = pam_start_confdir(argv[2], argc == 4 ? argv[3] : NULL, &conversation, argv[1], &pam);
    if (rc != PAM_SUCCESS) {
        fprintf(stderr, "pam_start_confdir: %d\n", rc);
        return 2;
    }
    pam_set_item(pam, PAM_TTY, "/dev/pts/0");
    rc = pam_authenticate(pam, 0);
    const void *user = NULL;
    pam_get_item(pam, PAM_USER, &user);
    printf("result: %d %s\n", rc, user ? (const char *)user : "-");
    fflush(stdout);
    pam_end(pam, rc);
    return rc == PAM_SUCCESS ? 0 : 1;
}
