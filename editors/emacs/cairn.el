;;; cairn.el --- Memory keeper for AI-assisted coding, over eglot  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The cairn maintainers

;; Author: The cairn maintainers
;; Maintainer: The cairn maintainers
;; URL: https://github.com/cairn-journal/cairn
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: tools, convenience
;; SPDX-License-Identifier: MIT

;; This file is not part of GNU Emacs.

;; Permission is hereby granted, free of charge, to any person obtaining
;; a copy of this software and associated documentation files (the
;; "Software"), to deal in the Software without restriction, including
;; without limitation the rights to use, copy, modify, merge, publish,
;; distribute, sublicense, and/or sell copies of the Software, and to
;; permit persons to whom the Software is furnished to do so, subject to
;; the following conditions:
;;
;; The above copyright notice and this permission notice shall be
;; included in all copies or substantial portions of the Software.
;;
;; THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND,
;; EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
;; MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
;; NONINFRINGEMENT.  IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE
;; LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION
;; OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION
;; WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

;;; Commentary:

;; cairn keeps a private journal of what you and your AI assistant
;; agreed on, digests it while Emacs is idle, and proposes edits to
;; your project memory (.agents/memory/, MEMORY.md) and instruction
;; files (AGENTS.md, CLAUDE.md).  This package is the Emacs side: it
;; talks to `cairn serve' through eglot and the cairn LSP contract
;; only (see docs in the repository's server README).
;;
;; The package has four files:
;;  - cairn.el (this file): the connection, the protocol glue, the
;;    turn and session API, idle maintenance and `cairn-mode';
;;  - cairn-cockpit.el: the memory cockpit, M-x cairn-cockpit;
;;  - cairn-menu.el: the cairn menu (`cairn-dispatch', transient when
;;    available), the jobs list and edit before accept;
;;  - cairn-gptel.el: the gptel adapter, loaded by `cairn-mode' once
;;    gptel is (gptel itself stays optional).
;; This file is longer than the others on purpose: connection,
;; protocol glue and `cairn-mode' depend on each other and form the
;; one core that the cockpit, the gptel adapter and other AI packages
;; build on.
;;
;; Loading any of them changes nothing in Emacs.  Setup:
;;
;;   (require 'cairn)
;;   (cairn-mode 1)
;;
;; `cairn-mode' (global) then
;;  - registers the cairn server with eglot and opens memory and
;;    instruction files in `cairn-memory-mode' with `eglot-ensure', so
;;    proposals show as diagnostics and `eglot-code-actions' offers
;;    accept / reject / show diff;
;;  - feeds every completed gptel turn to the server (when gptel is
;;    loaded, see `cairn-gptel-integration');
;;  - offers the server one maintenance opportunity per idle period
;;    (`cairn-idle-minutes').
;; Turning it off removes all of that again.
;;
;; M-x cairn-cockpit opens the memory cockpit (`*cairn: NAME*'):
;; Candidates, Memories and History in one table; press ? there for
;; the keys and the global commands.  The mode line shows the pending
;; proposals (mouse-1 opens the cockpit).
;; M-x cairn-drain-backlog processes everything waiting now, with
;; progress in the echo area and the mode line.
;;
;; Other AI packages feed turns with `cairn-turn-completed' and report
;; session boundaries with `cairn-session-event'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'eglot)
(require 'jsonrpc)
(require 'project)
(require 'diff-mode)

;; Declared special by eglot 1.9 only inside eglot.el; bound here too.
(defvar eglot-lsp-context)

;; The cockpit lives in cairn-cockpit.el; M-x cairn-cockpit loads it.
(autoload 'cairn-cockpit "cairn-cockpit" "Open the cairn memory cockpit." t)
;; The menu, the jobs and journal buffers and proposal editing live in cairn-menu.el.
(autoload 'cairn-dispatch "cairn-menu" "The cairn menu of global commands." t)
(autoload 'cairn-edit-proposal "cairn-menu" "Edit a proposal's text before accepting it." t)
(autoload 'cairn-accept-proposal "cairn-menu" "Accept a proposal (read with completion)." t)
(autoload 'cairn-show-proposal "cairn-menu" "Show a proposal: details and diff." t)
(autoload 'cairn-review "cairn-menu" "Queue a general review now." t)
(autoload 'cairn-jobs "cairn-menu" "List the maintenance jobs of a workspace's server." t)
(autoload 'cairn-journal "cairn-menu" "List the public journal's digests of a workspace." t)
(autoload 'cairn-cockpit-show-evidence "cairn-cockpit" "Show a proposal's evidence.")

(declare-function cairn-gptel-setup "cairn-gptel" ())
(declare-function cairn-gptel-teardown "cairn-gptel" ())

;;;; Customisation

(defgroup cairn nil
  "Memory keeper for AI-assisted coding."
  :group 'tools
  :prefix "cairn-")

(defun cairn--set-option (symbol value)
  "Set SYMBOL to VALUE and tell running cairn servers about it."
  (set-default symbol value)
  (when (fboundp 'cairn--options-changed)
    (funcall 'cairn--options-changed symbol)))

(defcustom cairn-server-command '("cairn" "serve")
  "Command (program and arguments) that starts the cairn language server.
The server speaks LSP on stdin/stdout."
  :type '(repeat string))

(defcustom cairn-mode-setting nil
  "How consolidation proposals are applied: the server's `mode' setting.
\"manual\": nothing is proposed unless asked; \"propose\": proposals
wait for you in the cockpit; \"auto\": the server applies them when no
turn is running (each remains undoable from History).  nil (the
default) sends nothing: the workspace's .cairn/config.toml, the
user's cairn config or the server default (\"propose\") decides.
The cockpit's header shows the mode in effect."
  :type '(choice (const :tag "From the cairn config files" nil)
                 (const "manual") (const "propose") (const "auto"))
  :set #'cairn--set-option)

(defcustom cairn-provider nil
  "Digest provider: \"extractive\", \"openai\" or \"command\".
\"extractive\" is the embedded engine (local, no model); \"openai\"
means any OpenAI-compatible endpoint, see `cairn-endpoint'; \"command\"
runs a program you already have (its argv is the `command' setting of
your cairn config file).  nil (the default) leaves the choice to the
cairn config files."
  :type '(choice (const :tag "From the cairn config files" nil)
                 (const "extractive") (const "openai") (const "command"))
  :set #'cairn--set-option)

(defcustom cairn-model ""
  "Model name for the \"openai\" provider; empty means the server default."
  :type 'string
  :set #'cairn--set-option)

(defcustom cairn-endpoint ""
  "Endpoint URL for the \"openai\" provider; empty means the server default.
The API key is read by the server from an environment variable, never
from Emacs."
  :type 'string
  :set #'cairn--set-option)

(defcustom cairn-idle-minutes nil
  "Minutes of Emacs idleness before the server gets a maintenance opportunity.
Each idle period offers one opportunity (processing, consolidation,
throttled cleanup); nothing repeats while you stay idle.  nil (the
default) sends nothing to the server (its config decides) and arms
the Emacs idle timer for 10 minutes."
  :type '(choice (const :tag "From the cairn config files" nil) number)
  :set #'cairn--set-option)

(defcustom cairn-seal-idle-minutes nil
  "Minutes without a new turn after which the server seals a session's capture.
nil (the default) leaves it to the cairn config files."
  :type '(choice (const :tag "From the cairn config files" nil) number)
  :set #'cairn--set-option)

(defcustom cairn-memory-roots nil
  "Extra memory roots (directories of topic files) besides .agents/memory.
Relative names are relative to the workspace."
  :type '(repeat directory)
  :set #'cairn--set-option)

(defcustom cairn-instruction-files nil
  "Instruction files (relative to the workspace) cairn may propose edits to.
nil (the default) sends nothing: the cairn config files decide (the
server's default is AGENTS.md); AGENTS.md and CLAUDE.md still open in
`cairn-memory-mode'."
  :type '(repeat string)
  :set #'cairn--set-option)

(defcustom cairn-gptel-integration t
  "When non-nil, `cairn-mode' feeds completed gptel turns to the server.
The adapter lives in cairn-gptel.el and is loaded once gptel is."
  :type 'boolean)

(defcustom cairn-connect-timeout 30
  "Seconds to wait for the server to start and initialize."
  :type 'number)

(defcustom cairn-request-timeout 90
  "Seconds to wait for a cairn request (accepting runs a worker)."
  :type 'number)

;;;; Server class, options and protocol glue

(defclass cairn-eglot-server (eglot-lsp-server)
  ((shown-messages
    :initform nil :accessor cairn--shown-messages
    :documentation "Messages already shown with window/showMessage.")
   (workspace
    :initform nil :accessor cairn--server-workspace
    :documentation "The workspace root (no trailing slash) the server was started for."))
  :documentation "An eglot connection to `cairn serve'.")

(defvar cairn--connections nil
  "Cairn servers started in this Emacs, newest first.
Dead ones are dropped whenever the list is read, see `cairn--servers'.")

(defun cairn--settings (&optional unset)
  "The server settings (protocol `Settings' names) the user set.
Options left at nil (or an empty string or list) are not sent, so the
workspace's .cairn/config.toml and the user's cairn config apply.
With UNSET non-nil they are sent as JSON null instead: a server that
got a value earlier drops it and the config files' value applies again."
  (let (out)
    (dolist (entry `((:mode . ,cairn-mode-setting)
                     (:provider . ,cairn-provider)
                     (:model . ,cairn-model)
                     (:endpoint . ,cairn-endpoint)
                     (:idleMinutes . ,cairn-idle-minutes)
                     (:sealIdleMinutes . ,cairn-seal-idle-minutes)
                     (:memoryRoots . ,(and cairn-memory-roots (vconcat cairn-memory-roots)))
                     (:instructionFiles . ,(and cairn-instruction-files
                                                (vconcat cairn-instruction-files)))))
      (let ((v (cdr entry)))
        (cond ((not (or (null v) (equal v "")))
               (setq out (plist-put out (car entry) v)))
              (unset (setq out (plist-put out (car entry) nil))))))
    out))

(defun cairn--settings-object ()
  "`cairn--settings' as a JSON object (an empty one when nothing is set)."
  (or (cairn--settings) (make-hash-table)))


(defun cairn--eglot-contact (&optional _interactive)
  "Contact for `eglot-server-programs': our class and `cairn-server-command'."
  (cons 'cairn-eglot-server cairn-server-command))

(defconst cairn--server-program '(cairn-memory-mode . cairn--eglot-contact)
  "The entry `cairn-mode' adds to `eglot-server-programs'.")

(cl-defmethod eglot-initialization-options ((server cairn-eglot-server))
  "Send the cairn defcustoms as initializationOptions; remember SERVER.
Eglot computes the initialize request from the project root, which is
`default-directory' here: that is the workspace SERVER serves."
  (setf (cairn--server-workspace server)
        (directory-file-name (expand-file-name default-directory)))
  (cl-pushnew server cairn--connections)
  (cairn--settings-object))

(cl-defmethod eglot-client-capabilities :around ((_server cairn-eglot-server))
  "Declare work-done progress support (eglot 1.9 does not)."
  (let* ((caps (cl-call-next-method))
         (window (copy-sequence (plist-get caps :window))))
    (plist-put caps :window (plist-put window :workDoneProgress t))))

(defun cairn--server-p (server)
  "Non-nil if SERVER is a live cairn connection."
  (and (cl-typep server 'cairn-eglot-server) (jsonrpc-running-p server)))

(defun cairn--send-configuration (server)
  "Send the current settings to SERVER as workspace/didChangeConfiguration.
Runs after eglot's own (empty) configuration signal on connect, so the
server keeps the cairn defcustoms.  Options set back to nil are sent
as null (jsonrpc writes nil as null), so their earlier value is dropped."
  (when (cairn--server-p server)
    (jsonrpc-notify server :workspace/didChangeConfiguration
                    (list :settings (list :cairn (cairn--settings t))))))

(defun cairn--options-changed (_symbol)
  "Tell every running cairn server about changed options."
  (mapc #'cairn--send-configuration (cairn--servers))
  (when (bound-and-true-p cairn-mode)
    (cairn--arm-idle-timer)))


;;;; Eglot internals (no public API)

(defun cairn--eglot-arguments ()
  "The arguments `eglot' takes to start the cairn server for this buffer.
Eglot has no public function that computes them, and they differ
between versions (one language id up to eglot 1.14, a list after), so
this wrapper is the one place the package calls `eglot--guess-contact'.
`cairn--server-program' is bound for the call: the server starts
whether or not `cairn-mode' registered it."
  (let ((eglot-server-programs (cons cairn--server-program eglot-server-programs))
        ;; a prefix argument (C-u M-x cairn-cockpit chooses the workspace)
        ;; would make eglot prompt for the server program
        (current-prefix-arg nil))
    (eglot--guess-contact)))

(defun cairn--server-info (server)
  "The serverInfo (name, version) SERVER sent in its initialize result.
Eglot keeps it without a public accessor, so this wrapper is the one
place the package reads `eglot--server-info'."
  (eglot--server-info server))

;;;; Memory files

(defalias 'cairn--memory-parent-mode
  (if (fboundp 'markdown-mode) 'markdown-mode 'text-mode)
  "Parent of `cairn-memory-mode': `markdown-mode' when installed.")

;;;###autoload
(define-derived-mode cairn-memory-mode cairn--memory-parent-mode "Cairn-Memory"
  "Major mode for cairn memory topic files, MEMORY.md and instruction files.
Derived from `markdown-mode' when it is available, else `text-mode'.
Eglot manages these buffers with the cairn server: pending proposals
appear as diagnostics and as code actions (`eglot-code-actions').")

(defun cairn--auto-mode-entries ()
  "The `auto-mode-alist' entries of `cairn-mode'."
  (append
   (list (cons "/MEMORY\\.md\\'" 'cairn-memory-mode)
         (cons "/\\.agents/memory/.*\\.md\\'" 'cairn-memory-mode))
   (mapcar (lambda (f) (cons (concat "/" (regexp-quote f) "\\'") 'cairn-memory-mode))
           (or cairn-instruction-files '("AGENTS.md" "CLAUDE.md")))
   (delq nil (mapcar (lambda (r)
                       (when (file-name-absolute-p r)
                         (cons (concat "\\`" (regexp-quote (file-name-as-directory
                                                             (expand-file-name r)))
                                       ".*\\.md\\'")
                               'cairn-memory-mode)))
                     cairn-memory-roots))))

(defun cairn--project-try (dir)
  "A project rooted at the nearest directory above DIR with cairn state.
Only consulted for eglot (LSP context) when no VC project was found,
so memory files of an unversioned workspace share its server."
  (when (bound-and-true-p eglot-lsp-context)
    (let ((root (locate-dominating-file
                 dir (lambda (d) (or (file-directory-p (expand-file-name ".cairn" d))
                                     (file-directory-p (expand-file-name ".agents" d)))))))
      (when root (cons 'transient (file-name-as-directory (expand-file-name root)))))))


(defun cairn--project-find-functions ()
  "`project-find-functions' with `cairn--project-try' last."
  (if (memq #'cairn--project-try project-find-functions)
      project-find-functions
    (append project-find-functions (list #'cairn--project-try))))

;;;; Connections

(defvar cairn--missing-reported nil
  "Server programs already reported missing in this Emacs session.")

(defun cairn--server-program-missing ()
  "The program of `cairn-server-command' when it cannot be run, else nil."
  (let ((program (car cairn-server-command)))
    (unless (and (stringp program)
                 (if (file-name-absolute-p program)
                     (file-executable-p program)
                   (executable-find program)))
      (or program "cairn"))))

(defun cairn--missing-message (program)
  "The one-line message for a missing server PROGRAM."
  (format "cairn not found (%s): set `cairn-server-command'" program))

(defun cairn--ensure ()
  "`eglot-ensure' for memory buffers, unless the cairn server cannot run.
A missing program is reported once per session instead of an error
from eglot on every memory file."
  (let ((missing (cairn--server-program-missing)))
    (if (not missing)
        (eglot-ensure)
      (unless (member missing cairn--missing-reported)
        (push missing cairn--missing-reported)
        (message "%s" (cairn--missing-message missing))))))

(defun cairn--project-root (&optional dir)
  "The root (no trailing slash) of the project of DIR, or nil outside any.
A project is what eglot finds for a memory file there: a version
controlled tree, or the nearest folder with .cairn or .agents."
  (let* ((default-directory (file-name-as-directory (expand-file-name (or dir default-directory))))
         (project-find-functions (cairn--project-find-functions))
         (project (let ((eglot-lsp-context t)) (project-current))))
    (and project (directory-file-name (expand-file-name (project-root project))))))

(defun cairn--root (&optional dir)
  "The workspace root (no trailing slash) for DIR or `default-directory'.
The root of the project eglot finds for a memory file there, else DIR."
  (or (cairn--project-root dir)
      (directory-file-name (expand-file-name (or dir default-directory)))))

(defun cairn--open-workspaces ()
  "The workspaces of the running cairn servers, newest first."
  (delete-dups (delq nil (mapcar #'cairn--workspace (cairn--servers)))))

(defun cairn--read-open-workspace (here open)
  "Read one of the OPEN workspaces, or HERE (a folder in no project).
HERE is offered last: choosing it starts a server there, which
creates .cairn/ in it."
  (let* ((new (format "%s (new: creates .cairn/ there)" (abbreviate-file-name here)))
         (choices (append (mapcar (lambda (ws) (cons (abbreviate-file-name ws) ws)) open)
                          (list (cons new here))))
         (answer (completing-read
                  (format "%s is in no project; cairn workspace (default %s): "
                          (abbreviate-file-name here) (caar choices))
                  choices nil t nil nil (caar choices))))
    (or (cdr (assoc answer choices))
        (user-error "Nothing started: no workspace chosen"))))

(defun cairn-read-workspace (&optional choose)
  "The workspace an interactive command works on.
The project of `default-directory' (or the workspace of a running
server).  With CHOOSE (the prefix argument), read a folder.  Outside
any project, offer the workspaces of the running servers (and that
folder, which a server would create .cairn/ in); with none running,
ask before starting a server there."
  (let ((here (directory-file-name (expand-file-name default-directory))))
    (cond (choose
           (directory-file-name
            (expand-file-name (read-directory-name "cairn workspace: "
                                                   (file-name-as-directory
                                                    (or (cairn--project-root) here))
                                                   nil t))))
          ((cairn-server here) here)
          ((cairn--project-root here))
          ((cairn--open-workspaces)
           (cairn--read-open-workspace here (cairn--open-workspaces)))
          ((y-or-n-p (format "%s is in no project: start cairn there (creates .cairn/)? "
                             (abbreviate-file-name here)))
           here)
          (t (user-error "Nothing started: C-u %s chooses a workspace"
                         (if this-command (format "M-x %s" this-command) "the command"))))))

(defun cairn--in-memory-buffer (dir function)
  "Call FUNCTION in a temporary buffer visiting a memory file of DIR's workspace.
Eglot finds the project and the server of that buffer as it would
for a real memory file there."
  (let ((dir (file-name-as-directory (expand-file-name dir))))
    (with-temp-buffer
      (setq default-directory dir)
      (let ((buffer-file-name (expand-file-name "MEMORY.md" dir))
            (major-mode 'cairn-memory-mode)
            (project-find-functions (cairn--project-find-functions)))
        (funcall function)))))

(defun cairn-server (&optional dir)
  "The live cairn server for the workspace of DIR, or nil."
  (cairn--in-memory-buffer (or dir default-directory)
                           (lambda ()
                             (let ((server (eglot-current-server)))
                               (and (cairn--server-p server) server)))))

(defun cairn--servers ()
  "All live cairn servers that finished connecting."
  (setq cairn--connections (cl-remove-if-not #'cairn--server-p cairn--connections))
  (cl-remove-if-not (lambda (server) (eq server (cairn-server (cairn--workspace server))))
                    cairn--connections))

(defun cairn--server-stderr-line (root)
  "The last line the server of ROOT wrote on stderr before it died, or nil.
Eglot keeps a server's stderr in a buffer named \" *EGLOT (NAME/...) stderr*\"."
  (let ((name (regexp-quote (file-name-nondirectory (directory-file-name root))))
        line)
    (dolist (buf (buffer-list))
      (when (and (not line)
                 (string-match-p (concat "\\` ?\\*EGLOT (" name "/.*stderr\\*\\'") (buffer-name buf)))
        (with-current-buffer buf
          (save-excursion
            (goto-char (point-max))
            (skip-chars-backward " \t\n")
            (let ((text (string-trim (buffer-substring-no-properties (line-beginning-position) (point)))))
              (unless (or (string-empty-p text) (string-match-p "\\`Process .* exited" text))
                (setq line text)))))))
    line))

(defvar cairn--requesting nil
  "Non-nil while a synchronous cairn request or connection waits.")

(defun cairn-connect (&optional dir)
  "Return the cairn server for the workspace of DIR, starting it if needed."
  (or (cairn-server dir)
      (let* ((missing (cairn--server-program-missing))
             (root (if missing
                       (user-error "%s" (cairn--missing-message missing))
                     (cairn--root dir)))
             (deadline (+ (float-time) cairn-connect-timeout))
             (eglot-sync-connect t)
             (eglot-connect-timeout cairn-connect-timeout))
        (let ((cairn--requesting t))    ; follow-ups wait for this connection (`cairn--run-soon')
          (condition-case err
              (cairn--in-memory-buffer root (lambda () (apply #'eglot (cairn--eglot-arguments))))
            (error (user-error "The cairn server for %s did not start: %s" (abbreviate-file-name root)
                               (or (cairn--server-stderr-line root) (error-message-string err)))))
          (while (and (not (cairn-server root)) (< (float-time) deadline))
            (accept-process-output nil 0.2)))
        (let ((server (cairn-server root)))
          (unless server
            (user-error "The cairn server for %s did not start: %s" (abbreviate-file-name root)
                        (or (cairn--server-stderr-line root) "no answer (see `cairn-server-command')")))
          ;; `cairn-mode' sends it from `eglot-connect-hook'
          (unless (memq #'cairn--send-configuration eglot-connect-hook)
            (cairn--send-configuration server))
          server))))

(defun cairn--workspace (server)
  "The workspace root path of SERVER."
  (cairn--server-workspace server))

(defun cairn-request (server method params)
  "Send request METHOD with PARAMS to SERVER and wait for the result.
A refusal signals a `user-error' saying \"cairn: E_CODE: reason\" (the
server's fixed code and message, never a raw `jsonrpc-error' object)."
  (let ((cairn--requesting t))
    (condition-case err
        (jsonrpc-request server method params :timeout cairn-request-timeout)
      (jsonrpc-error (signal 'user-error (list (concat "cairn: " (cairn--error-message err))))))))

;; Eglot waits for a starting server's answer to `initialize' by a copy
;; of `jsonrpc-request''s wait.  Its public hooks bracket that wait:
;; `eglot-server-initialized-hook' runs before the request is sent,
;; `eglot-connect-hook' once the answer arrived (a server whose answer
;; never comes is shut down, and no longer running).
(defvar cairn--connecting nil
  "Eglot servers created whose answer to `initialize' has not arrived.")

(defun cairn--connecting-start (server)
  "Note that eglot waits for SERVER's answer to `initialize'."
  (push server cairn--connecting))

(defun cairn--connecting-done (server)
  "Note that SERVER answered `initialize'."
  (setq cairn--connecting (delq server cairn--connecting)))

(defun cairn--request-waits-p ()
  "Non-nil while a synchronous request waits: cairn's, or one eglot made.
Eglot asks some things synchronously (code actions, shutdown) with
`jsonrpc-request', whose frame on the stack tells; a server's
`initialize' is waited for between the hooks `cairn--connecting' notes."
  (or cairn--requesting
      (progn (setq cairn--connecting (cl-remove-if-not #'jsonrpc-running-p cairn--connecting))
             cairn--connecting)
      (let ((i 0) frame found)
        (while (and (not found) (setq frame (backtrace-frame i #'cairn--request-waits-p)))
          (setq found (eq (cadr frame) 'jsonrpc-request)
                i (1+ i)))
        found)))

(defun cairn--run-soon (function &rest args)
  "Call FUNCTION with ARGS from a timer, once no request waits.
Follow-ups that make synchronous requests run this way, never inside
a process filter.  Nor while a synchronous request waits, cairn's or
eglot's: its waiting runs timers, and a request made there could
receive the waiting one's answer, whose delivery unwinds through
FUNCTION and cuts it short."
  (run-at-time (if (cairn--request-waits-p) 0.05 0) nil
               (lambda ()
                 (if (cairn--request-waits-p)
                     (apply #'cairn--run-soon function args)
                   (apply function args)))))

(defun cairn--in-emacs-terms (text)
  "TEXT, a server's error message, with its hint for the CLI said as in Emacs.
A proposal refused as stale only because memory now says otherwise on
its subject (`E_PROPOSAL_STALE') says \"(to keep both: accept
--keep-both)\": in Emacs that is K in the cockpit."
  (if (and (string-prefix-p "E_PROPOSAL_STALE" text) (string-search "accept --keep-both" text))
      (string-replace "accept --keep-both" "K in the cockpit" text)
    text))

(defun cairn--error-message (err)
  "The server's message from ERR, a `jsonrpc-error' or any error."
  (or (and (eq (car err) 'jsonrpc-error)
           (let ((message (alist-get 'jsonrpc-error-message (cdr err))))
             (and (stringp message) (cairn--in-emacs-terms message))))
      (and (eq (car err) 'user-error) (stringp (cadr err)) (string-prefix-p "cairn: " (cadr err))
           (substring (cadr err) 7))
      (error-message-string err)))

(defvar cairn--status-cache nil
  "Alist (WORKSPACE . STATUS) of the last `cairn/status' answers.
The mode line and the cockpit read it; refreshed after every job.")

(defun cairn--cache-status (workspace status)
  "Remember STATUS of WORKSPACE and update the mode lines; return STATUS."
  (setf (alist-get workspace cairn--status-cache nil nil #'equal) status)
  (force-mode-line-update t)
  status)

(defun cairn-status (&optional workspace)
  "The `cairn/status' counts of WORKSPACE as a plist."
  (let* ((server (cairn-connect workspace))
         (ws (cairn--workspace server)))
    (cairn--cache-status ws (cairn-request server :cairn/status (list :workspace ws)))))

(defun cairn--status-async (server)
  "Ask SERVER for its workspace's status without waiting; cache the answer."
  (let ((ws (cairn--workspace server)))
    (when (cairn--server-p server)
      (jsonrpc-async-request server :cairn/status (list :workspace ws)
                             :success-fn (lambda (st) (cairn--cache-status ws st))
                             :error-fn #'ignore :timeout-fn #'ignore))))

;;;; Commands (workspace/executeCommand)

(defun cairn--command-request (server command arguments)
  "Execute COMMAND with ARGUMENTS (a vector) on SERVER; return its result."
  (cairn--after-command
   server command
   (cairn-request server :workspace/executeCommand (list :command command :arguments arguments))))

(defun cairn-command (workspace command argument)
  "Execute cairn COMMAND with the single ARGUMENT object in WORKSPACE."
  (cairn--command-request (cairn-connect workspace) command (vector argument)))

(defvar cairn--in-flight 0
  "Number of asynchronous cairn commands waiting for their answer.")

(defconst cairn--spinner-frames ["⠋" "⠙" "⠹" "⠸" "⠼" "⠴" "⠦" "⠧" "⠇" "⠏"]
  "Frames of the spinner shown while commands are in flight.")

(defvar cairn--spinner-timer nil "The timer turning the spinner.")
(defvar cairn--spinner-index 0 "The spinner's current frame.")

(defun cairn--spinner ()
  "The spinner's current frame, or nil when nothing is in flight."
  (when (> cairn--in-flight 0)
    (aref cairn--spinner-frames (mod cairn--spinner-index (length cairn--spinner-frames)))))

(defun cairn--spin ()
  "Advance the spinner; stop it once nothing is in flight."
  (setq cairn--spinner-index (1+ cairn--spinner-index))
  (when (and (<= cairn--in-flight 0) (timerp cairn--spinner-timer))
    (cancel-timer cairn--spinner-timer)
    (setq cairn--spinner-timer nil))
  (force-mode-line-update t))

(defun cairn--stop-in-flight (message)
  "Count one asynchronous command as answered; show MESSAGE unless nil."
  (cl-decf cairn--in-flight)
  (force-mode-line-update t)
  (when message (message "%s" message)))

(defun cairn--command-async (server command arguments &optional on-done on-error)
  "Execute COMMAND with ARGUMENTS (a vector) on SERVER without waiting.
Emacs stays usable while the server works (a spinner turns in the mode
line and the cockpit header).  Once the server answers, the usual
follow-ups run (`cairn--after-command'), then ON-DONE with the result.
On an error or a timeout the echo area says why and ON-ERROR, when
given, is called with that one-line message.  Both callbacks run from
a timer (`cairn--run-soon'), never inside the connection's process
filter, so that they may make synchronous requests of their own (made
inside the filter, their answers would interleave with this one's and
get lost).
`cairn--in-flight' counts the command until its callback has
returned.  A follow-up that fails (a refresh timed out) is reported in
the echo area and ON-DONE still runs: the command was carried out.  A
request that cannot be sent (the server just died) signals at once and
is not counted.  Return nil."
  (cl-incf cairn--in-flight)
  (unless (timerp cairn--spinner-timer)
    (setq cairn--spinner-timer (run-with-timer 0.1 0.1 #'cairn--spin)))
  (force-mode-line-update t)
  (let ((failed (lambda (text)
                  (cairn--run-soon
                   (lambda ()
                     (unwind-protect
                         (when on-error (funcall on-error text))
                       (cairn--stop-in-flight (concat "cairn: " text))))))))
    (condition-case err
        (jsonrpc-async-request
         server :workspace/executeCommand (list :command command :arguments arguments)
         :timeout cairn-request-timeout
         :success-fn (lambda (result)
                       (cairn--run-soon
                        (lambda ()
                          (unwind-protect
                              (progn
                                (condition-case err
                                    (cairn--after-command server command result)
                                  (error (message "cairn: %s" (cairn--error-message err))))
                                (when on-done (funcall on-done result)))
                            (cairn--stop-in-flight nil)))))
         :error-fn (lambda (err)
                     (funcall failed (cairn--in-emacs-terms (format "%s" (or (plist-get err :message) err)))))
         :timeout-fn (lambda ()
                       (funcall failed (format "%s timed out (see `cairn-request-timeout')" command))))
      (t (cairn--stop-in-flight nil)
         (signal (car err) (cdr err)))))
  nil)

(defun cairn-command-async (workspace command argument &optional on-done on-error)
  "Execute cairn COMMAND with the single ARGUMENT object in WORKSPACE.
Does not wait for the answer: ON-DONE and ON-ERROR as in
`cairn--command-async'.  Return nil."
  (cairn--command-async (cairn-connect workspace) command (vector argument) on-done on-error))

(defvar cairn-workspace-changed-functions nil
  "Functions called with a workspace root after its memory or backlog changed.
The cockpit adds `cairn-cockpit-refresh-all' when it opens.")

(defun cairn--workspace-changed (workspace)
  "Run `cairn-workspace-changed-functions' for WORKSPACE; refresh its count."
  (let ((server (cl-find workspace cairn--connections :key #'cairn--workspace :test #'equal)))
    (when server (cairn--status-async server)))
  (run-hook-with-args 'cairn-workspace-changed-functions workspace))

(defvar cairn--changed-timers nil
  "Alist (WORKSPACE . TIMER): workspace changes waiting to be announced.")

(defun cairn--schedule-changed (workspace)
  "Announce a change of WORKSPACE soon, once for a burst of server news."
  (unless (assoc workspace cairn--changed-timers)
    (push (cons workspace
                (run-at-time 0.2 nil
                             (lambda ()
                               (cairn--run-soon
                                (lambda ()
                                  (setq cairn--changed-timers
                                        (cl-remove workspace cairn--changed-timers
                                                   :key #'car :test #'equal))
                                  (cairn--workspace-changed workspace))))))
          cairn--changed-timers)))

(defun cairn--wire-summary (body)
  "What `cairn.wireAgents' did, from its result BODY: one line.
Names each proposal made (or pending already) and each refusal with
its code and message; nothing written yet in either case."
  (let ((parts
         (append
          (mapcar (lambda (p)
                    (format "%s %s (%s)%s" (if (eq (plist-get p :new) :json-false) "pending already:" "proposed")
                            (plist-get p :id) (plist-get p :title)
                            (if (eq (plist-get p :new) :json-false) "" ", to accept in the cockpit")))
                  (plist-get body :proposals))
          (mapcar (lambda (r)
                    (format "refused %s: %s"
                            (plist-get r :code)
                            (or (plist-get r :message) (plist-get r :target))))
                  (plist-get body :refused))
          (and (> (length (plist-get body :wired)) 0)
               (list (format "reading the memory already: %s"
                             (mapconcat #'cairn--wire-name (plist-get body :wired) ", ")))))))
    (concat "wire: " (if parts (mapconcat #'identity parts "; ") "nothing to propose"))))

(defun cairn--wire-name (item)
  "An agent or target ITEM of a `cairn.wireAgents' answer, as text."
  (cond ((stringp item) item)
        ((plist-get item :target)
         (format "%s (%s)" (plist-get item :target)
                 (mapconcat #'identity (plist-get item :agents) ", ")))
        (t (format "%s" item))))

(defun cairn--command-summary (command result)
  "What COMMAND did, from its RESULT: a line for the echo area, or nil.
Decisions name their proposals and the state each is in now; a review
says it was queued (it runs in the background), never that it is done."
  (let* ((body (plist-get result :result))
         (decisions (append (or (plist-get body :decisions) (and (plist-get body :id) (list body))) nil))
         (states (mapconcat (lambda (d) (format "%s %s%s" (plist-get d :id) (plist-get d :state)
                                                (if (eq (plist-get d :changed) :json-false) " (already)" "")))
                            decisions ", ")))
    (pcase command
      ("cairn.review" (format "review queued%s; the cockpit refreshes when it has run"
                              (if (plist-get result :jobId) (format " (job %s)" (plist-get result :jobId)) "")))
      ((or "cairn.accept" "cairn.reject" "cairn.unreject" "cairn.undo" "cairn.acceptEdited")
       (and decisions (format "%s: %s" (substring command 6) states)))
      ("cairn.wireAgents" (cairn--wire-summary body)))))

(defun cairn--after-command (server command result)
  "Follow-up in Emacs once SERVER ran COMMAND and answered RESULT."
  (let ((summary (cairn--command-summary command result)))
    (when summary (message "cairn: %s" (string-replace "%" "%%" summary))))
  (pcase command
    ("cairn.showProposal" (cairn--show-proposal result t (cairn--workspace server)))
    ((or "cairn.accept" "cairn.reject" "cairn.unreject" "cairn.undo" "cairn.acceptEdited")
     (cairn--revert-workspace-buffers (cairn--workspace server))
     (cairn--workspace-changed (cairn--workspace server)))
    ("cairn.wireAgents" (cairn--workspace-changed (cairn--workspace server))))
  result)

(defun cairn--action-command (action)
  "The Command object inside ACTION (a CodeAction or a Command), or nil."
  (let ((cmd (plist-get action :command)))
    (cond ((stringp cmd) action)
          ((consp cmd) cmd))))

(defun cairn-execute-action (server action)
  "Execute ACTION (a code action or command) on SERVER the way eglot does."
  (if (fboundp 'eglot-execute)
      (eglot-execute server action)
    (let ((cmd (cairn--action-command action)))
      (with-no-warnings
        (eglot-execute-command server (intern (plist-get cmd :command))
                               (plist-get cmd :arguments))))))

(if (fboundp 'eglot-execute)
    (cl-defmethod eglot-execute :around ((server cairn-eglot-server) action)
      "Run cairn commands without blocking Emacs, with the cairn follow-ups."
      (let ((cmd (plist-get action :command)))
        (if (stringp cmd)
            (cairn--command-async server cmd (or (plist-get action :arguments) []))
          (cl-call-next-method))))
  (with-no-warnings
    (cl-defmethod eglot-execute-command :around ((server cairn-eglot-server) command arguments)
      "Run cairn commands without blocking Emacs, with the cairn follow-ups."
      (ignore #'cl-call-next-method)
      (cairn--command-async server (format "%s" command) (or arguments [])))))

(defun cairn--revert-workspace-buffers (workspace)
  "Revert unmodified buffers under WORKSPACE whose files changed on disk."
  (let ((dirs (cons (file-name-as-directory workspace)
                    (mapcar (lambda (r) (file-name-as-directory (expand-file-name r workspace)))
                            cairn-memory-roots))))
    (dolist (buf (buffer-list))
      (with-current-buffer buf
        (when (and buffer-file-name
                   (not (buffer-modified-p))
                   (cl-some (lambda (d) (file-in-directory-p buffer-file-name d)) dirs)
                   (file-exists-p buffer-file-name)
                   (not (verify-visited-file-modtime buf)))
          (revert-buffer t t t))))))

;;;; Progress, messages

(defvar cairn--progress nil
  "Work-done progress in flight: alist of (TOKEN . (TITLE MESSAGE PERCENTAGE)).")

(defvar cairn-progress-log nil
  "Recent `$/progress' events, newest first: (TOKEN KIND MESSAGE PERCENTAGE).")

(defvar cairn-lighter-map
  (let ((map (make-sparse-keymap)))
    (define-key map [mode-line mouse-1] #'cairn-cockpit)
    map)
  "Mouse keys of the `cairn-mode' mode line indicator.")

(defun cairn--lighter-status ()
  "The cached status of the current buffer's workspace (or the only one)."
  (let ((dir (file-name-as-directory (expand-file-name default-directory)))
        best)
    ;; nested workspaces: the innermost one (the longest root) holding the buffer
    (dolist (entry cairn--status-cache)
      (when (and (string-prefix-p (file-name-as-directory (car entry)) dir)
                 (or (null best) (> (length (car entry)) (length (car best)))))
        (setq best entry)))
    (or (cdr best)
        (and (= 1 (length cairn--status-cache)) (cdar cairn--status-cache)))))

(defun cairn--lighter ()
  "Mode line text of `cairn-mode'.
\" cairn\", \" cairn:N\" with N pending proposals, the drain's progress
while draining; clicking it opens the cockpit (`cairn-lighter-map')."
  (let* ((p (cdar cairn--progress))
         (n (plist-get (cairn--lighter-status) :proposals))
         (text (concat " cairn"
                       (if (and (integerp n) (> n 0)) (format ":%d" n) "")
                       (let ((spin (cairn--spinner))) (if spin (concat " " spin) ""))
                       (if p (format "[%s]" (if (nth 2 p) (format "%d%%%%" (nth 2 p)) "…")) ""))))
    (propertize text 'local-map cairn-lighter-map 'mouse-face 'mode-line-highlight
                'help-echo "cairn: pending proposals; mouse-1 opens the cockpit")))

(defun cairn--on-progress (server token value)
  "Show SERVER's progress VALUE for TOKEN in the echo area and mode line."
  (let* ((kind (plist-get value :kind))
         (known (cdr (assoc token cairn--progress)))
         (title (or (plist-get value :title) (car known) "cairn"))
         (msg (plist-get value :message))
         (pct (plist-get value :percentage)))
    (push (list token kind msg pct) cairn-progress-log)
    (when (nthcdr 50 cairn-progress-log) (setcdr (nthcdr 49 cairn-progress-log) nil))
    (if (equal kind "end")
        (setq cairn--progress (cl-remove token cairn--progress :key #'car :test #'equal))
      (setq cairn--progress (cons (list token title msg pct)
                                  (cl-remove token cairn--progress :key #'car :test #'equal))))
    (message "%s%s%s%s" title
             (if (numberp pct) (format " %d%%" pct) "")
             (if msg (concat ": " msg) "")
             (if (equal kind "end") " (done)" ""))
    (force-mode-line-update t)
    (when (equal kind "end")
      (let ((ws (cairn--workspace server)))
        (cairn--run-soon #'cairn--workspace-changed ws)))))

(cl-defmethod eglot-handle-request
  ((_server cairn-eglot-server) (_method (eql window/workDoneProgress/create)) &key &allow-other-keys)
  "Accept a progress token (shown when `$/progress' arrives)."
  nil)

(cl-defmethod eglot-handle-notification
  ((server cairn-eglot-server) (_method (eql $/progress)) &key token value)
  "Show SERVER's cairn work-done progress VALUE for TOKEN."
  (cairn--on-progress server token value))

(defun cairn--finish-line-p (message)
  "Non-nil if MESSAGE is the server's log line for a finished job."
  (and (stringp message)
       (string-match "\\`cairn: [^ ]+ [^ ]+ \\([a-z_-]+\\)" message)
       (not (equal (match-string 1 message) "started"))))

(cl-defmethod eglot-handle-notification :after
  ((server cairn-eglot-server) (_method (eql window/logMessage)) &key message &allow-other-keys)
  "Refresh views of SERVER's workspace when MESSAGE is a job's finish line.
The server sends that line after its status snapshot is fresh."
  (when (cairn--finish-line-p message)
    (cairn--schedule-changed (cairn--workspace server))))

(cl-defmethod eglot-handle-notification :after
  ((server cairn-eglot-server) (_method (eql textDocument/publishDiagnostics)) &rest _)
  "Refresh views of SERVER's workspace: its proposals changed."
  (cairn--schedule-changed (cairn--workspace server)))

(cl-defmethod eglot-handle-notification
  ((server cairn-eglot-server) (_method (eql window/showMessage)) &key message &allow-other-keys)
  "Show each distinct MESSAGE once per connection to SERVER."
  (unless (member message (cairn--shown-messages server))
    (push message (cairn--shown-messages server))
    (cl-call-next-method)))

;;;; Turns and sessions

(defun cairn--now ()
  "The current time as an RFC 3339 UTC string."
  (format-time-string "%Y-%m-%dT%H:%M:%SZ" nil t))

;;;###autoload
(defun cairn-turn-completed (workspace session-id turn-id parent-turn-id user assistant
                                       &optional completed-at)
  "Tell cairn that a turn of a conversation completed.
WORKSPACE is a directory of the project the conversation is about;
SESSION-ID names the conversation; TURN-ID must be stable for the
same turn (re-sending it is harmless); PARENT-TURN-ID is the previous
turn's id or nil; USER and ASSISTANT are the two texts; COMPLETED-AT is
an RFC 3339 time string (default now).  Starts the server if needed.
Return TURN-ID."
  (let ((server (cairn-connect workspace)))
    (jsonrpc-notify server :cairn/turnCompleted
                    (list :workspace (cairn--workspace server)
                          :sessionId session-id
                          :turnId turn-id
                          :parentTurnId parent-turn-id
                          :user user
                          :assistant assistant
                          :completedAt (or completed-at (cairn--now))))
    turn-id))

;;;###autoload
(defun cairn-session-event (workspace session-id kind)
  "Report a session boundary: KIND is \"clear\", \"compaction\" or \"session-end\".
WORKSPACE and SESSION-ID as in `cairn-turn-completed'.  Does nothing
when no server runs for WORKSPACE (then no turn was sent either)."
  (unless (member kind '("clear" "compaction" "session-end"))
    (error "Unknown cairn session event kind %S" kind))
  (let ((server (cairn-server workspace)))
    (when server
      (jsonrpc-notify server :cairn/sessionEvent
                      (list :workspace (cairn--workspace server)
                            :sessionId session-id :kind kind))
      t)))

(defun cairn-turn-id (parent-turn-id user assistant)
  "A stable turn id: a hash of PARENT-TURN-ID, USER and ASSISTANT texts."
  (concat "t-" (substring (secure-hash 'sha256 (encode-coding-string
                                                 (concat (or parent-turn-id "") "\0" user "\0" assistant)
                                                 'utf-8 t))
                          0 32)))

;;;; Idle maintenance

(defvar cairn--idle-timer nil "The idle timer of `cairn-mode'.")

(defun cairn--arm-idle-timer ()
  "(Re)start the idle timer for `cairn-idle-minutes'."
  (when (timerp cairn--idle-timer) (cancel-timer cairn--idle-timer))
  (setq cairn--idle-timer
        (run-with-idle-timer (* 60 (cairn--idle-minutes)) t #'cairn-idle-tick)))

(defun cairn--idle-minutes ()
  "Minutes of idleness the idle timer waits: `cairn-idle-minutes' or 10."
  (or cairn-idle-minutes 10))

(defun cairn-idle-tick (&optional seconds)
  "Offer every running cairn server a maintenance opportunity.
SECONDS is how long Emacs has been idle (default: `current-idle-time').
Sends the `cairn/idle' notification only: never waits for the server.
Return the servers notified."
  (let* ((idle (current-idle-time))
         (seconds (float (or seconds (if idle (float-time idle) (* 60 (cairn--idle-minutes))))))
         (servers (cairn--servers)))
    (dolist (server servers)
      (ignore-errors (jsonrpc-notify server :cairn/idle (list :seconds seconds))))
    servers))

;;;; Global mode

;;;###autoload
(define-minor-mode cairn-mode
  "Keep project memory with cairn.
Registers the cairn server with eglot, opens memory and instruction
files in `cairn-memory-mode' with eglot, feeds gptel turns, and offers
idle maintenance every `cairn-idle-minutes'.  Turning the mode off
removes all of it.  See `cairn-cockpit' and `cairn-drain-backlog'."
  :global t
  :group 'cairn
  :lighter (:eval (cairn--lighter))
  (dolist (entry (cairn--auto-mode-entries))
    (setq auto-mode-alist (delete entry auto-mode-alist)))
  (setq eglot-server-programs (delete cairn--server-program eglot-server-programs))
  (remove-hook 'eglot-connect-hook #'cairn--send-configuration)
  (remove-hook 'eglot-server-initialized-hook #'cairn--connecting-start)
  (remove-hook 'eglot-connect-hook #'cairn--connecting-done)
  (setq cairn--connecting nil)
  (remove-hook 'cairn-memory-mode-hook #'cairn--ensure)
  (remove-hook 'project-find-functions #'cairn--project-try)
  (remove-hook 'after-load-functions #'cairn--after-load)
  (when (featurep 'cairn-gptel) (cairn-gptel-teardown))
  (when (timerp cairn--idle-timer) (cancel-timer cairn--idle-timer))
  (setq cairn--idle-timer nil)
  (when cairn-mode
    (dolist (entry (cairn--auto-mode-entries))
      (push entry auto-mode-alist))
    (push cairn--server-program eglot-server-programs)
    (add-hook 'eglot-connect-hook #'cairn--send-configuration 90)
    (add-hook 'eglot-server-initialized-hook #'cairn--connecting-start)
    (add-hook 'eglot-connect-hook #'cairn--connecting-done)
    (add-hook 'cairn-memory-mode-hook #'cairn--ensure)
    (add-hook 'project-find-functions #'cairn--project-try 90)
    (if (featurep 'gptel)
        (cairn--gptel-setup)
      (add-hook 'after-load-functions #'cairn--after-load))
    (cairn--arm-idle-timer)))

(defun cairn--gptel-setup ()
  "Load and connect the gptel adapter if `cairn-mode' wants it."
  (when (and cairn-mode cairn-gptel-integration)
    (require 'cairn-gptel)
    (cairn-gptel-setup)))

(defun cairn--after-load (_file)
  "Connect the gptel adapter once gptel has been loaded."
  (when (featurep 'gptel)
    (remove-hook 'after-load-functions #'cairn--after-load)
    (cairn--gptel-setup)))

;;;###autoload
(defun cairn-drain-backlog (&optional workspace)
  "Process everything waiting in WORKSPACE now, then review the backlog.
WORKSPACE defaults to the project of `default-directory'.  Progress
shows in the echo area and the mode line.  Return the server's answer
\(its `progress' is the work-done token)."
  (interactive (list (cairn-read-workspace current-prefix-arg)))
  (let* ((server (cairn-connect workspace))
         (ws (cairn--workspace server))
         (result (cairn--command-request server "cairn.drainBacklog" (vector (list :workspace ws)))))
    (message "cairn: draining the backlog of %s" (abbreviate-file-name ws))
    (cairn--workspace-changed ws)
    result))

;;;; Remember

(defconst cairn-remember-types '("user" "feedback" "project" "reference")
  "The note types `cairn-remember' may ask for.")

(defun cairn--remember-summary (result)
  "One line saying what `cairn.remember' RESULT proposed."
  (let ((proposals (append (plist-get result :proposals) nil)))
    (cond (proposals
           (mapconcat (lambda (p) (format "%s %s: %s" (plist-get p :id) (plist-get p :state)
                                          (plist-get p :title)))
                      proposals "; "))
          ((eq (plist-get result :reviewed) t)
           "remembered; no new proposal (memory holds it, or it was rejected before)")
          (t "remembered; its proposal follows from the review running now"))))

;;;###autoload
(defun cairn-remember (text &optional type workspace)
  "Remember TEXT in the memory of WORKSPACE; return the server's result.
The server captures TEXT and reviews it at once: the answer lists the
proposals made for it (`:proposals'), to accept or reject in the
cockpit (applied already in auto mode).  TYPE is one of
`cairn-remember-types', or nil to let the server classify TEXT.
Interactively, WORKSPACE is read first as by `cairn-read-workspace'
\\(outside any project: one of the open workspaces, never a new one
silently), then TEXT is the active region, else read in the
minibuffer; a prefix argument also reads TYPE, two prefix arguments
also the workspace's folder.  From Lisp, WORKSPACE defaults to the
project of `default-directory'."
  (interactive
   (let ((ws (cairn-read-workspace (equal current-prefix-arg '(16)))))
     (list (if (use-region-p)
               (buffer-substring-no-properties (region-beginning) (region-end))
             (read-string "Remember: "))
           (and current-prefix-arg
                (completing-read "Note type (default: classified from the text): "
                                 (cons "classify" cairn-remember-types) nil t nil nil "classify"))
           ws)))
  (let* ((server (cairn-connect workspace))
         (ws (cairn--workspace server))
         (argument (append (list :workspace ws :text text :source "emacs")
                           (and type (not (member type '("" "classify"))) (list :type type))))
         (result (plist-get (cairn--command-request server "cairn.remember" (vector argument))
                            :result)))
    (cairn--revert-workspace-buffers ws)
    (cairn--workspace-changed ws)
    (message "cairn: %s" (string-replace "%" "%%" (cairn--remember-summary result)))
    result))

;;;; Proposal buffers

(defun cairn--proposal (server workspace id)
  "Details of proposal ID in WORKSPACE from SERVER (with its unified diff)."
  (cairn-request server :cairn/proposal (list :workspace workspace :id id)))

(defvar-local cairn-proposal--id nil "The proposal shown in this buffer.")
(defvar-local cairn-proposal--workspace nil "The workspace of the proposal shown here.")

(defvar cairn-proposal-keys
  (let ((map (make-sparse-keymap)))
    (define-key map "a" #'cairn-proposal-accept)
    (define-key map "r" #'cairn-proposal-reject)
    (define-key map "e" #'cairn-proposal-edit)
    (define-key map "u" #'cairn-proposal-undo)
    (define-key map "w" #'cairn-proposal-evidence)
    (define-key map "q" #'quit-window)
    map)
  "Keys of a proposal's diff buffer, over `diff-mode''s.
A buffer-local map rather than a minor mode: loading cairn adds
nothing to `minor-mode-map-alist'.")

(defun cairn--use-keys (keys)
  "Give this buffer a local map of KEYS over its major mode's map."
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map (make-composed-keymap keys (current-local-map)))
    (use-local-map map))
  ;; `diff-mode' puts its read-only keys (r restricts the view) above the
  ;; local map, in `minor-mode-overriding-map-alist': KEYS come first there too
  (setq-local minor-mode-overriding-map-alist
              (mapcar (lambda (entry) (cons (car entry) (make-composed-keymap keys (cdr entry))))
                      minor-mode-overriding-map-alist)))

(defun cairn--proposal-decide (command done)
  "Run COMMAND on this buffer's proposal without waiting; quit the window.
The echo area says DONE once the server answered, or why it refused
\(then the proposal is still pending: show it again to decide)."
  (unless cairn-proposal--id (user-error "No proposal in this buffer"))
  (let ((id cairn-proposal--id))
    (cairn-command-async cairn-proposal--workspace command
                         (list :workspace cairn-proposal--workspace :ids (vector id))
                         (lambda (_result) (message "cairn: %s %s" done id)))
    (let ((win (get-buffer-window (current-buffer))))
      (when win (quit-window nil win)))))

(defvar-local cairn-proposal--state nil "The state of the proposal shown here.")

(defun cairn--proposal-check (&rest states)
  "Refuse with a `user-error' unless this buffer's proposal is in one of STATES."
  (when (and cairn-proposal--state (not (member cairn-proposal--state states)))
    (user-error "Proposal %s is %s: %s" cairn-proposal--id cairn-proposal--state
                (cairn--proposal-hints cairn-proposal--state))))

(defun cairn--proposal-hints (state)
  "The keys that act on a proposal in STATE."
  (pcase state
    ("pending" "a accept, r reject, e edit, q quit")
    ("applied" "u undo, q quit")
    ("rejected" "u take the rejection back, q quit")
    ("undone" "a accept again, q quit")
    (_ "q quit")))

(defun cairn-proposal-accept ()
  "Accept the proposal shown in this buffer (pending, or undone: again)."
  (interactive)
  (cairn--proposal-check "pending" "undone")
  (cairn--proposal-decide "cairn.accept" "accepted"))

(defun cairn-proposal-undo ()
  "Undo the decision on this buffer's proposal, after confirmation.
An applied proposal is undone; a rejected one is pending again."
  (interactive)
  (cairn--proposal-check "applied" "rejected")
  (let ((id cairn-proposal--id)
        (ws cairn-proposal--workspace))
    (if (equal cairn-proposal--state "applied")
        (when (y-or-n-p (format "Undo %s: restore its files? " id))
          (cairn-command-async ws "cairn.undo" (list :workspace ws :id id))
          (quit-window))
      (when (y-or-n-p (format "Take back the rejection of %s: pending again? " id))
        (cairn--proposal-decide "cairn.unreject" "pending again:")))))

(defun cairn-proposal-reject ()
  "Reject the proposal shown in this buffer (later reviews remember it)."
  (interactive)
  (cairn--proposal-check "pending")
  (when (y-or-n-p (format "Reject %s (later reviews will not propose it again)? " cairn-proposal--id))
    (cairn--proposal-decide "cairn.reject" "rejected")))

(defun cairn-proposal-evidence ()
  "Show the evidence of this buffer's proposal: the journal's digests it came from."
  (interactive)
  (unless cairn-proposal--id (user-error "No proposal in this buffer"))
  (let* ((ws cairn-proposal--workspace)
         (p (cairn--proposal (cairn-connect ws) ws cairn-proposal--id)))
    (cairn-cockpit-show-evidence ws cairn-proposal--id (plist-get p :title) (plist-get p :evidence))))

(defun cairn-proposal-edit ()
  "Edit the proposed text of this buffer's proposal before accepting it."
  (interactive)
  (cairn--proposal-check "pending")
  (cairn-edit-proposal cairn-proposal--workspace cairn-proposal--id))

(defun cairn--show-proposal (proposal &optional diff-only workspace)
  "Show PROPOSAL (a `cairn/proposal' answer) in a `diff-mode' buffer.
With DIFF-ONLY, the buffer holds the unified diff alone.  With
WORKSPACE, a pending proposal can be decided there (a, r, e) and the
buffer's window is selected.  Return the buffer."
  (let ((buf (get-buffer-create (if diff-only "*cairn diff*" "*cairn proposal*")))
        (inhibit-read-only t))
    (with-current-buffer buf
      (erase-buffer)
      (unless diff-only
        (dolist (field '(:id :kind :target :title :state :reason :summary))
          (let ((v (plist-get proposal field)))
            (when (and v (not (equal v "")))
              (insert (format "%-8s %s\n" (substring (symbol-name field) 1) v)))))
        (insert (format "%-8s %s\n\n" "evidence"
                        (mapconcat #'identity (append (plist-get proposal :evidence) nil) ", "))))
      (insert (or (plist-get proposal :diff) ""))
      (diff-mode)
      (setq buffer-read-only t)
      (setq cairn-proposal--id (plist-get proposal :id)
            cairn-proposal--workspace workspace
            cairn-proposal--state (plist-get proposal :state))
      ;; the buffer is reused: commands run from it act on this proposal's workspace
      (when workspace
        (setq default-directory (file-name-as-directory (expand-file-name workspace))))
      (when workspace (cairn--use-keys cairn-proposal-keys))
      ;; the keys first: a narrow window cuts the end of a header line, never its start
      (setq header-line-format (format "%scairn %s: %s"
                                       (if workspace
                                           (format "%s | " (cairn--proposal-hints (plist-get proposal :state)))
                                         "")
                                       (or (plist-get proposal :kind) "proposal")
                                       (string-replace "%" "%%" (or (plist-get proposal :title) ""))))
      (goto-char (point-min)))
    (let ((win (display-buffer buf)))
      (when (and win workspace)
        (save-current-buffer (select-window win))))
    buf))

(provide 'cairn)
;;; cairn.el ends here
