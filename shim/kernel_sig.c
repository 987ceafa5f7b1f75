/* Kernel signatures read from OpenCL C source: which arguments are buffers
 * the kernel may write, which it can only read, without building the
 * program with -cl-kernel-arg-info (which would change the vendor's kernel
 * cache key, so a program under the shim would miss the binaries its native
 * runs left).
 *
 * This is not a C parser.  It tokenizes the source (comments, strings and
 * preprocessor lines skipped), finds `__kernel`/`kernel` function
 * definitions, and reads each parameter's qualifiers.  It only ever says
 * what is certain from the tokens of one parameter: a pointer to __global
 * memory (written unless `const` comes before the `*`), a pointer to
 * __constant memory, an image (read-only unless write_only or read_write).
 * Everything else (typedef'd pointers, macros, scalars) stays unknown and
 * is decided per value by clSetKernelArg, as for programs from binaries.  A
 * kernel defined more than once (preprocessor variants) or whose parameter
 * count differs from the vendor's is not used at all. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

#define MAX_TOKEN 64

struct lexer {
    const char *s;
    bool line_start;        /* only blanks since the last newline */
    char tok[MAX_TOKEN];    /* identifier (truncated) or one punctuator */
};

/* Skips blanks, comments and preprocessor lines. */
static void skip_space(struct lexer *lx)
{
    const char *s = lx->s;

    for (;;) {
        if (*s == '\n') {
            lx->line_start = true;
            s++;
        } else if (isspace((unsigned char)*s)) {
            s++;
        } else if (s[0] == '/' && s[1] == '/') {
            while (*s && *s != '\n')
                s++;
        } else if (s[0] == '/' && s[1] == '*') {
            const char *e = strstr(s + 2, "*/");
            s = e ? e + 2 : s + strlen(s);
        } else if (*s == '#' && lx->line_start) {
            while (*s && *s != '\n')
                s += (s[0] == '\\' && s[1] == '\n') ? 2 : 1;
        } else {
            break;
        }
    }
    lx->s = s;
}

/* The next token into lx->tok; false at the end of the source. */
static bool next(struct lexer *lx)
{
    const char *s;
    size_t n = 0;

    skip_space(lx);
    s = lx->s;
    if (!*s)
        return false;
    lx->line_start = false;
    if (isalpha((unsigned char)*s) || *s == '_') {
        while (isalnum((unsigned char)*s) || *s == '_') {
            if (n < MAX_TOKEN - 1)
                lx->tok[n++] = *s;
            s++;
        }
    } else if (isdigit((unsigned char)*s)) {
        while (isalnum((unsigned char)*s) || *s == '.')
            s++;
        lx->tok[n++] = '0';
    } else if (*s == '"' || *s == '\'') {
        char q = *s++;
        while (*s && *s != q)
            s += (s[0] == '\\' && s[1]) ? 2 : 1;
        if (*s)
            s++;
        lx->tok[n++] = '"';
    } else {
        lx->tok[n++] = *s++;
    }
    lx->tok[n] = '\0';
    lx->s = s;
    return true;
}

static bool is(const char *tok, const char *a, const char *b)
{
    return strcmp(tok, a) == 0 || (b && strcmp(tok, b) == 0);
}

/* What one parameter's tokens say, as it is read. */
struct param {
    bool star;              /* a '*' was seen */
    bool const_before;      /* `const` before the first '*' */
    bool global, constant;  /* address space before the first '*' */
    bool image, writable_image;
    unsigned tokens;
};

static void param_token(struct param *pa, const char *tok)
{
    size_t n = strlen(tok);

    pa->tokens++;
    if (pa->star)
        return;
    if (tok[0] == '*')
        pa->star = true;
    else if (is(tok, "const", "__const"))
        pa->const_before = true;
    else if (is(tok, "__global", "global"))
        pa->global = true;
    else if (is(tok, "__constant", "constant"))
        pa->constant = true;
    else if (strncmp(tok, "image", 5) == 0 && n > 7 &&
             strcmp(tok + n - 2, "_t") == 0)
        pa->image = true;
    else if (is(tok, "write_only", "__write_only") ||
             is(tok, "read_write", "__read_write"))
        pa->writable_image = true;
}

static uint8_t param_class(const struct param *pa)
{
    if (pa->star && pa->constant)
        return SHIM_ARG_MEM_RO;
    if (pa->star && pa->global)
        return pa->const_before ? SHIM_ARG_MEM_RO : SHIM_ARG_MEM_RW;
    if (!pa->star && pa->image)
        return pa->writable_image ? SHIM_ARG_MEM_RW : SHIM_ARG_MEM_RO;
    return SHIM_ARG_UNKNOWN;
}

/* Skips a balanced (...) whose '(' is the current token. */
static bool skip_parens(struct lexer *lx)
{
    int depth = 1;

    while (depth > 0 && next(lx)) {
        if (lx->tok[0] == '(')
            depth++;
        else if (lx->tok[0] == ')')
            depth--;
    }
    return depth == 0;
}

/* Reads the parameter list after a kernel's '(' into cls (at most max);
 * returns the number of parameters, or -1 if the list does not parse. */
static int read_params(struct lexer *lx, uint8_t *cls, cl_uint max)
{
    struct param pa = {0};
    int n = 0, depth = 0;
    bool only_void = false;

    while (next(lx)) {
        char c = lx->tok[0];
        if (c == '(' || c == '[') {
            depth++;
        } else if ((c == ')' || c == ']') && depth > 0) {
            depth--;
        } else if ((c == ',' || c == ')') && depth == 0) {
            if (pa.tokens == 0 && c == ')' && n == 0)
                return 0;                       /* () */
            if (c == ')' && n == 0 && only_void && pa.tokens == 1)
                return 0;                       /* (void) */
            if ((cl_uint)n < max)
                cls[n] = param_class(&pa);
            n++;
            if (c == ')')
                return n;
            memset(&pa, 0, sizeof(pa));
            continue;
        }
        if (depth == 0) {
            only_void = pa.tokens == 0 && strcmp(lx->tok, "void") == 0;
            param_token(&pa, lx->tok);
        }
    }
    return -1;
}

int shim_kernel_sig_classes(const char *source, const char *kernel,
                            cl_uint n_args, uint8_t *cls)
{
    struct lexer lx = {.s = source, .line_start = true};
    uint8_t *tmp = calloc(n_args ? n_args : 1, 1);
    char prev[MAX_TOKEN] = "";
    int found = 0;
    bool matches = false;

    if (!tmp)
        return -ENOMEM;
    while (source && next(&lx)) {
        if (!is(lx.tok, "__kernel", "kernel"))
            continue;
        /* Up to the name: the identifier just before the first '(' that
         * does not open an attribute. */
        prev[0] = '\0';
        while (next(&lx)) {
            if (lx.tok[0] == '(' && prev[0] &&
                strcmp(prev, "__attribute__") != 0)
                break;
            if (lx.tok[0] == '(') {
                if (!skip_parens(&lx))
                    break;
                prev[0] = '\0';
                continue;
            }
            if (lx.tok[0] == ';' || lx.tok[0] == '{')
                break;
            strcpy(prev, isalpha((unsigned char)lx.tok[0]) ||
                                 lx.tok[0] == '_'
                             ? lx.tok
                             : "");
        }
        if (lx.tok[0] != '(' || strcmp(prev, kernel) != 0)
            continue;
        int n = read_params(&lx, tmp, n_args);
        /* A definition, not a declaration: a body follows (attributes may
         * come first). */
        while (n >= 0 && next(&lx) && strcmp(lx.tok, "__attribute__") == 0)
            if (!next(&lx) || lx.tok[0] != '(' || !skip_parens(&lx))
                break;
        if (n < 0 || lx.tok[0] != '{')
            continue;
        found++;
        matches = (cl_uint)n == n_args;
    }
    if (found == 1 && matches)
        memcpy(cls, tmp, n_args);
    free(tmp);
    return found == 1 && matches ? 0 : -ENOENT;
}
