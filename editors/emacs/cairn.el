;;; cairn.el --- Memory keeper for AI-assisted coding, over eglot  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9") (jsonrpc "1.0.14"))
;; Keywords: tools, convenience

;;; Commentary:

;; cairn keeps a private journal of what you and your AI assistant
;; agreed on, digests it while Emacs is idle, and proposes edits to
;; your project memory (.agents/memory/, MEMORY.md) and instruction
;; files (AGENTS.md, CLAUDE.md).  This package is the Emacs side: it
;; talks to `cairn serve' through eglot and the cairn LSP contract
;; only (see docs in the repository's server README).
;;
;; Setup:
;;
;;   (require 'cairn)
;;   (cairn-mode 1)
;;
;; `cairn-mode' (global) then
;;  - opens memory and instruction files in `cairn-memory-mode' and
;;    starts the server for them with `eglot-ensure', so proposals show
;;    as diagnostics and `eglot-code-actions' offers accept / reject /
;;    show diff;
;;  - feeds every completed gptel turn to the server (no dependency on
;;    gptel: the hook is installed when gptel loads);
;;  - offers the server one maintenance opportunity per idle period
;;    (`cairn-idle-minutes').
;;
;; M-x cairn-cockpit opens the memory cockpit (`*cairn*'): Candidates,
;; Memories and History in one table; press ? there for the keys.
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
(require 'tabulated-list)
(require 'diff-mode)

(defvar gptel-mode)
(defvar gptel-prompt-prefix-alist)
(defvar gptel-response-prefix-alist)
(defvar gptel-post-response-functions)
(defvar cairn-cockpit--workspace)

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

(defcustom cairn-mode-setting "propose"
  "How consolidation proposals are applied: the server's `mode' setting.
\"manual\": nothing is proposed unless asked; \"propose\": proposals
wait for you in the cockpit; \"auto\": the server applies them when no
turn is running (each remains undoable from History)."
  :type '(choice (const "manual") (const "propose") (const "auto"))
  :set #'cairn--set-option)

(defcustom cairn-provider "extractive"
  "Digest provider: \"extractive\" (local, no model) or \"openai\".
\"openai\" means any OpenAI-compatible endpoint, see `cairn-endpoint'."
  :type '(choice (const "extractive") (const "openai"))
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

(defcustom cairn-idle-minutes 10
  "Minutes of Emacs idleness before the server gets a maintenance opportunity.
Each idle period offers one opportunity (processing, consolidation,
throttled cleanup); nothing repeats while you stay idle."
  :type 'number
  :set #'cairn--set-option)

(defcustom cairn-seal-idle-minutes 20
  "Minutes without a new turn after which the server seals a session's capture."
  :type 'number
  :set #'cairn--set-option)

(defcustom cairn-memory-roots nil
  "Extra memory roots (directories of topic files) besides .agents/memory.
Relative names are relative to the workspace."
  :type '(repeat directory)
  :set #'cairn--set-option)

(defcustom cairn-instruction-files '("AGENTS.md" "CLAUDE.md")
  "Instruction files (relative to the workspace) cairn may propose edits to."
  :type '(repeat string)
  :set #'cairn--set-option)

(defcustom cairn-gptel-integration t
  "When non-nil, `cairn-mode' feeds completed gptel turns to the server."
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
    :documentation "Messages already shown with window/showMessage."))
  :documentation "An eglot connection to `cairn serve'.")

(defun cairn--settings ()
  "The server settings (protocol `Settings' names) from the defcustoms."
  (append
   (list :mode cairn-mode-setting
         :provider cairn-provider
         :idleMinutes cairn-idle-minutes
         :sealIdleMinutes cairn-seal-idle-minutes
         :memoryRoots (vconcat cairn-memory-roots)
         :instructionFiles (vconcat cairn-instruction-files))
   (unless (string-empty-p cairn-model) (list :model cairn-model))
   (unless (string-empty-p cairn-endpoint) (list :endpoint cairn-endpoint))))

(defun cairn--eglot-contact (&optional _interactive)
  "Contact for `eglot-server-programs': our class and `cairn-server-command'."
  (cons 'cairn-eglot-server cairn-server-command))

(cl-defmethod eglot-initialization-options ((_server cairn-eglot-server))
  "Send the cairn defcustoms as initializationOptions."
  (cairn--settings))

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
server keeps the cairn defcustoms."
  (when (cairn--server-p server)
    (jsonrpc-notify server :workspace/didChangeConfiguration
                    (list :settings (list :cairn (cairn--settings))))))

(defun cairn--options-changed (_symbol)
  "Tell every running cairn server about changed options."
  (mapc #'cairn--send-configuration (cairn--servers))
  (when (bound-and-true-p cairn-mode)
    (cairn--arm-idle-timer)))

(add-hook 'eglot-connect-hook #'cairn--send-configuration 90)

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

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '(cairn-memory-mode . cairn--eglot-contact)))

(defun cairn--auto-mode-entries ()
  "The `auto-mode-alist' entries `cairn-mode' installs."
  (append
   (list (cons "/MEMORY\\.md\\'" 'cairn-memory-mode)
         (cons "/\\.agents/memory/.*\\.md\\'" 'cairn-memory-mode))
   (mapcar (lambda (f) (cons (concat "/" (regexp-quote f) "\\'") 'cairn-memory-mode))
           cairn-instruction-files)
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

;;;; Connections

(defun cairn--project (dir)
  "The eglot project for DIR."
  (let ((default-directory (file-name-as-directory (expand-file-name dir)))
        (project-find-functions (append project-find-functions (list #'cairn--project-try))))
    (eglot--current-project)))

(defun cairn--root (&optional dir)
  "The workspace root (no trailing slash) for DIR or `default-directory'."
  (directory-file-name
   (expand-file-name (project-root (cairn--project (or dir default-directory))))))

(defun cairn--servers ()
  "All live cairn servers."
  (let (out)
    (maphash (lambda (_project servers)
               (dolist (s servers) (when (cairn--server-p s) (push s out))))
             eglot--servers-by-project)
    out))

(defun cairn-server (&optional dir)
  "The live cairn server for the workspace of DIR, or nil."
  (cl-find-if #'cairn--server-p
              (gethash (cairn--project (or dir default-directory)) eglot--servers-by-project)))

(defun cairn-connect (&optional dir)
  "Return the cairn server for the workspace of DIR, starting it if needed."
  (or (cairn-server dir)
      (let* ((root (file-name-as-directory (cairn--root dir)))
             (deadline (+ (float-time) cairn-connect-timeout))
             (eglot-sync-connect t)
             (eglot-connect-timeout cairn-connect-timeout)
             (project-find-functions (append project-find-functions (list #'cairn--project-try))))
        (with-temp-buffer
          (setq default-directory root)
          (let ((buffer-file-name (expand-file-name "MEMORY.md" root))
                (major-mode 'cairn-memory-mode))
            (apply #'eglot (eglot--guess-contact))))
        (while (and (not (cairn-server root)) (< (float-time) deadline))
          (accept-process-output nil 0.2))
        (or (cairn-server root)
            (error "cairn: the server for %s did not start (see `cairn-server-command')" root)))))

(defun cairn--workspace (server)
  "The workspace root path of SERVER."
  (directory-file-name (expand-file-name (project-root (eglot--project server)))))

(defun cairn-request (server method params)
  "Send request METHOD with PARAMS to SERVER and wait for the result."
  (jsonrpc-request server method params :timeout cairn-request-timeout))

(defun cairn--error-message (err)
  "The server's message from ERR, a `jsonrpc-error' or any error."
  (or (and (eq (car err) 'jsonrpc-error) (alist-get 'jsonrpc-error-message (cdr err)))
      (error-message-string err)))

(defun cairn-status (&optional workspace)
  "The `cairn/status' counts of WORKSPACE as a plist."
  (let ((server (cairn-connect workspace)))
    (cairn-request server :cairn/status (list :workspace (cairn--workspace server)))))

;;;; Commands (workspace/executeCommand)

(defun cairn--command-request (server command arguments)
  "Execute COMMAND with ARGUMENTS (a vector) on SERVER; return its result."
  (cairn--after-command
   server command
   (jsonrpc-request server :workspace/executeCommand
                    (list :command command :arguments arguments)
                    :timeout cairn-request-timeout)))

(defun cairn-command (workspace command argument)
  "Execute cairn COMMAND with the single ARGUMENT object in WORKSPACE."
  (cairn--command-request (cairn-connect workspace) command (vector argument)))

(defun cairn--after-command (server command result)
  "Follow-up in Emacs once SERVER ran COMMAND and answered RESULT."
  (pcase command
    ("cairn.showProposal" (cairn--show-proposal result t))
    ((or "cairn.accept" "cairn.reject" "cairn.undo")
     (cairn--revert-workspace-buffers (cairn--workspace server))
     (cairn-cockpit-refresh-all (cairn--workspace server))))
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
      "Run cairn commands with the cairn timeout and follow-ups."
      (let ((cmd (plist-get action :command)))
        (if (stringp cmd)
            (cairn--command-request server cmd (or (plist-get action :arguments) []))
          (cl-call-next-method))))
  (with-no-warnings
    (cl-defmethod eglot-execute-command :around ((server cairn-eglot-server) command arguments)
      "Run cairn commands with the cairn timeout and follow-ups."
      (ignore #'cl-call-next-method)
      (cairn--command-request server (format "%s" command) (or arguments [])))))

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

(defun cairn--lighter ()
  "Mode line text of `cairn-mode': \" cairn\", with progress while draining."
  (let ((p (cdar cairn--progress)))
    (if p
        (format " cairn[%s]" (if (nth 2 p) (format "%d%%%%" (nth 2 p)) "…"))
      " cairn")))

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
        (run-at-time 0 nil #'cairn-cockpit-refresh-all ws)))))

(cl-defmethod eglot-handle-request
  ((_server cairn-eglot-server) (_method (eql window/workDoneProgress/create)) &key &allow-other-keys)
  "Accept a progress token (shown when `$/progress' arrives)."
  nil)

(cl-defmethod eglot-handle-notification
  ((server cairn-eglot-server) (_method (eql $/progress)) &key token value)
  "Show cairn work-done progress."
  (cairn--on-progress server token value))

(cl-defmethod eglot-handle-notification
  ((server cairn-eglot-server) (_method (eql window/showMessage)) &key message &allow-other-keys)
  "Show each distinct MESSAGE once per connection."
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
Returns TURN-ID."
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
    (error "cairn: unknown session event kind %S" kind))
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

;;;; gptel adapter

(defvar-local cairn--session-id nil "This buffer's conversation id, or nil before its first turn.")
(put 'cairn--session-id 'permanent-local t)
(defvar-local cairn--session-workspace nil "Workspace the buffer's turns were sent to.")
(put 'cairn--session-workspace 'permanent-local t)

(defun cairn--new-session-id ()
  "A fresh, unique session id."
  (concat "emacs-" (substring (secure-hash 'sha256 (format "%s %s %s %s" (emacs-pid) (float-time)
                                                          (random) (buffer-name)))
                              0 24)))

(defun cairn--gptel-response-p (pos)
  "Non-nil if POS is in text gptel inserted as a response."
  (let ((v (get-text-property pos 'gptel)))
    (and v (not (eq v 'ignore)))))

(defun cairn--strip-gptel-prefixes (text)
  "TEXT without gptel's prompt/response prefixes and surrounding blanks."
  (let ((text (string-trim text)))
    (dolist (prefix (list (alist-get major-mode (bound-and-true-p gptel-prompt-prefix-alist))
                          (alist-get major-mode (bound-and-true-p gptel-response-prefix-alist))))
      (when (and (stringp prefix) (not (string-empty-p (string-trim prefix))))
        (let ((p (string-trim prefix)))
          (when (string-prefix-p p text) (setq text (string-trim (substring text (length p)))))
          (when (string-suffix-p p text) (setq text (string-trim (substring text 0 (- (length p)))))))))
    text))

(defun cairn-gptel-turns (end)
  "The conversation in this gptel buffer up to END: a list of (USER . ASSISTANT).
Responses are the text gptel marked with its `gptel' property; the text
before each response is the user's prompt."
  (save-restriction
    (widen)
    (let ((pos (point-min)) (user-start (point-min)) turns)
      (while (< pos end)
        (let ((next (min end (next-single-property-change pos 'gptel nil end))))
          (when (cairn--gptel-response-p pos)
            (let ((user (cairn--strip-gptel-prefixes (buffer-substring-no-properties user-start pos)))
                  (assistant (buffer-substring-no-properties pos next)))
              (if (and turns (string-empty-p user))
                  (setcdr (car turns) (concat (cdar turns) assistant))
                (push (cons user assistant) turns))
              (setq user-start next)))
          (setq pos next)))
      (mapcar (lambda (turn) (cons (car turn) (string-trim (cdr turn)))) (nreverse turns)))))

(defun cairn-gptel-turn-at (end)
  "The turn ending at END: (TURN-ID PARENT-TURN-ID USER ASSISTANT), or nil.
Ids chain content hashes from the start of the buffer, so re-sending
the same conversation gives the same ids."
  (let ((parent nil) (result nil))
    (dolist (turn (cairn-gptel-turns end))
      (let ((id (cairn-turn-id parent (car turn) (cdr turn))))
        (setq result (list id parent (car turn) (cdr turn))
              parent id)))
    result))

(defun cairn--gptel-session ()
  "This buffer's session id, starting a session (and its hooks) if needed."
  (unless cairn--session-id
    (setq cairn--session-id (cairn--new-session-id)
          cairn--session-workspace (cairn--root))
    (add-hook 'kill-buffer-hook #'cairn--gptel-kill-buffer nil t)
    (add-hook 'after-change-functions #'cairn--gptel-after-change nil t))
  cairn--session-id)

(defun cairn-end-session (kind)
  "End this buffer's session with event KIND.
KIND is \"clear\", \"compaction\" or \"session-end\"."
  (when cairn--session-id
    (let ((sid cairn--session-id) (ws cairn--session-workspace))
      (setq cairn--session-id nil)
      (condition-case err
          (cairn-session-event ws sid kind)
        (error (message "cairn: session event not sent (%s)" (error-message-string err)))))))

(defun cairn--gptel-kill-buffer ()
  "Report the end of the buffer's session."
  (cairn-end-session "session-end"))

(defun cairn--gptel-after-change (_beg _end _len)
  "Report a clear when the conversation buffer was emptied."
  (when (and cairn--session-id (= (buffer-size) 0))
    (cairn-end-session "clear")))

(defun cairn-gptel-post-response (beg end)
  "Send the turn gptel just completed (response between BEG and END).
For `gptel-post-response-functions'; acts in `gptel-mode' buffers only
and never signals (a failing hook must not break gptel)."
  (when (and cairn-gptel-integration (< beg end) (bound-and-true-p gptel-mode))
    (condition-case err
        (let ((turn (cairn-gptel-turn-at end))
              (session (cairn--gptel-session))
              (ws cairn--session-workspace))
          (when turn
            (let ((send (lambda ()
                          (condition-case err
                              (apply #'cairn-turn-completed ws session turn)
                            (error (message "cairn: turn not sent (%s)" (error-message-string err)))))))
              ;; starting a server waits: never inside gptel's process filter
              (if (cairn-server ws) (funcall send) (run-at-time 0 nil send)))))
      (error (message "cairn: turn not sent (%s)" (error-message-string err))))))

(defun cairn--end-all-sessions ()
  "End every open conversation session (Emacs is exiting)."
  (dolist (buf (buffer-list))
    (with-current-buffer buf
      (when cairn--session-id (cairn-end-session "session-end")))))

(defun cairn--install-gptel ()
  "Hook the gptel adapter in (gptel is loaded)."
  (when (and cairn-gptel-integration (bound-and-true-p cairn-mode))
    (add-hook 'gptel-post-response-functions #'cairn-gptel-post-response)))

;;;; Idle maintenance

(defvar cairn--idle-timer nil "The idle timer of `cairn-mode'.")

(defun cairn--arm-idle-timer ()
  "(Re)start the idle timer for `cairn-idle-minutes'."
  (when (timerp cairn--idle-timer) (cancel-timer cairn--idle-timer))
  (setq cairn--idle-timer
        (run-with-idle-timer (* 60 cairn-idle-minutes) t #'cairn-idle-tick)))

(defun cairn-idle-tick (&optional seconds)
  "Offer every running cairn server a maintenance opportunity.
SECONDS is how long Emacs has been idle (default: `current-idle-time').
Sends the `cairn/idle' notification only: never waits for the server.
Returns the servers notified."
  (let* ((idle (current-idle-time))
         (seconds (float (or seconds (if idle (float-time idle) (* 60 cairn-idle-minutes)))))
         (servers (cairn--servers)))
    (dolist (server servers)
      (ignore-errors (jsonrpc-notify server :cairn/idle (list :seconds seconds))))
    servers))

;;;; Global mode

;;;###autoload
(define-minor-mode cairn-mode
  "Keep project memory with cairn.
Opens memory and instruction files in `cairn-memory-mode' with eglot,
feeds gptel turns, and offers idle maintenance every
`cairn-idle-minutes'.  See `cairn-cockpit' and `cairn-drain-backlog'."
  :global t
  :group 'cairn
  :lighter (:eval (cairn--lighter))
  (dolist (entry (cairn--auto-mode-entries))
    (setq auto-mode-alist (delete entry auto-mode-alist)))
  (remove-hook 'cairn-memory-mode-hook #'eglot-ensure)
  (remove-hook 'project-find-functions #'cairn--project-try)
  (remove-hook 'kill-emacs-hook #'cairn--end-all-sessions)
  (when (boundp 'gptel-post-response-functions)
    (remove-hook 'gptel-post-response-functions #'cairn-gptel-post-response))
  (when (timerp cairn--idle-timer) (cancel-timer cairn--idle-timer))
  (setq cairn--idle-timer nil)
  (when cairn-mode
    (dolist (entry (cairn--auto-mode-entries))
      (push entry auto-mode-alist))
    (add-hook 'cairn-memory-mode-hook #'eglot-ensure)
    (add-hook 'project-find-functions #'cairn--project-try 90)
    (add-hook 'kill-emacs-hook #'cairn--end-all-sessions)
    (if (featurep 'gptel)
        (cairn--install-gptel)
      (with-eval-after-load 'gptel (cairn--install-gptel)))
    (cairn--arm-idle-timer)))

;;;###autoload
(defun cairn-drain-backlog (&optional workspace)
  "Process everything waiting in WORKSPACE now, then review the backlog.
Progress shows in the echo area and the mode line.  Returns the
server's answer (its `progress' is the work-done token)."
  (interactive (list (if (derived-mode-p 'cairn-cockpit-mode) cairn-cockpit--workspace
                       default-directory)))
  (let* ((server (cairn-connect workspace))
         (ws (cairn--workspace server))
         (result (cairn--command-request server "cairn.drainBacklog" (vector (list :workspace ws)))))
    (message "cairn: draining the backlog of %s" (abbreviate-file-name ws))
    (cairn-cockpit-refresh-all ws)
    result))

;;;; Proposal buffers

(defun cairn--proposal (server workspace id)
  "Details of proposal ID in WORKSPACE from SERVER (with its unified diff)."
  (cairn-request server :cairn/proposal (list :workspace workspace :id id)))

(defun cairn--show-proposal (proposal &optional diff-only)
  "Show PROPOSAL (a `cairn/proposal' answer) in a `diff-mode' buffer.
With DIFF-ONLY, the buffer holds the unified diff alone.  Returns the buffer."
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
      (setq header-line-format (format "cairn %s: %s"
                                       (or (plist-get proposal :kind) "proposal")
                                       (string-replace "%" "%%" (or (plist-get proposal :title) ""))))
      (goto-char (point-min)))
    (display-buffer buf)
    buf))

;;;; Cockpit

(defconst cairn-cockpit-views '("candidates" "memories" "history")
  "The cockpit's views, in TAB order.")

(defvar-local cairn-cockpit--workspace nil "Workspace shown in the cockpit.")
(defvar-local cairn-cockpit--view "candidates" "Current cockpit view.")
(defvar-local cairn-cockpit--back nil "Views to return to with q, most recent first.")
(defvar-local cairn-cockpit--status nil "Last `cairn/status' answer.")
(defvar-local cairn-cockpit--state "starting" "Connection / refresh state for the header line.")
(defvar-local cairn-cockpit--server-name "cairn" "Server name and version for the header line.")

(defvar cairn-cockpit-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map (kbd "q") #'cairn-cockpit-back)
    (define-key map (kbd "?") #'cairn-cockpit-keys)
    (define-key map (kbd "g") #'revert-buffer)
    (define-key map (kbd "RET") #'cairn-cockpit-act)
    (define-key map (kbd "i") #'cairn-cockpit-info)
    (define-key map (kbd "a") #'cairn-cockpit-accept)
    (define-key map (kbd "r") #'cairn-cockpit-reject)
    (define-key map (kbd "u") #'cairn-cockpit-undo)
    (define-key map (kbd "d") #'cairn-cockpit-diff)
    (define-key map (kbd "TAB") #'cairn-cockpit-next-view)
    (define-key map (kbd "<backtab>") #'cairn-cockpit-previous-view)
    (define-key map (kbd "v") #'cairn-cockpit-choose-view)
    (define-key map (kbd "D") #'cairn-drain-backlog)
    map)
  "Keys of the cairn cockpit.")

(defconst cairn-cockpit--keys
  '(("RET" . "act on the row: details and diff / visit the memory file / show the decision")
    ("i" . "info panel for the row")
    ("a" . "accept the proposal (Candidates)")
    ("r" . "reject the proposal (Candidates)")
    ("u" . "undo the decision (History)")
    ("d" . "show the diff in a diff-mode buffer")
    ("TAB" . "next view; S-TAB previous view; v choose a view")
    ("D" . "drain the backlog now (progress in the mode line)")
    ("g" . "refresh")
    ("q" . "back to the previous view, or quit")
    ("?" . "this help"))
  "Key help of the cockpit.")

(define-derived-mode cairn-cockpit-mode tabulated-list-mode "Cairn"
  "The cairn memory cockpit: Candidates, Memories and History of a workspace.
\\<cairn-cockpit-mode-map>\\[cairn-cockpit-keys] lists the keys.

\\{cairn-cockpit-mode-map}"
  (setq tabulated-list-use-header-line nil
        tabulated-list-padding 1)
  (setq-local revert-buffer-function #'cairn-cockpit--revert)
  (setq header-line-format '(:eval (cairn-cockpit--header))))

(defun cairn-cockpit--view-label (view)
  "VIEW capitalised."
  (capitalize view))

(defun cairn-cockpit--header ()
  "Header line: identity, scope, counts, state."
  (let* ((st cairn-cockpit--status)
         (counts (mapconcat (lambda (k) (format "%s %s" (car k) (or (plist-get st (cdr k)) "?")))
                            '(("pending" . :pending) ("running" . :running)
                              ("retry" . :retryWaiting) ("attention" . :attention)
                              ("exhausted" . :exhausted) ("digests" . :digests)
                              ("proposals" . :proposals))
                            " "))
         (scope (mapconcat (lambda (v) (if (equal v cairn-cockpit--view)
                                           (propertize (format "[%s]" (cairn-cockpit--view-label v))
                                                       'face 'bold)
                                         (cairn-cockpit--view-label v)))
                           cairn-cockpit-views " "))
         (state (cond ((cdar cairn--progress)
                       (let ((p (cdar cairn--progress)))
                         (format "draining%s" (if (nth 2 p) (format " %d%%" (nth 2 p)) ""))))
                      ((eq (plist-get st :draining) t) "draining")
                      ((cl-some (lambda (k) (and (integerp (plist-get st k)) (> (plist-get st k) 0)))
                                '(:attention :exhausted))
                       (concat cairn-cockpit--state ", needs attention: cairn.retry or cairn.discard"))
                      (t cairn-cockpit--state))))
    (string-replace "%" "%%"
                    (format " %s @ %s | %s | %s | %s"
                            cairn-cockpit--server-name
                            (if cairn-cockpit--workspace
                                (abbreviate-file-name cairn-cockpit--workspace) "?")
                            scope counts state))))

(defun cairn-cockpit--format (view)
  "Columns of VIEW."
  (pcase view
    ("candidates" [("State" 8 t) ("Kind" 9 t) ("Target" 28 t) ("Title" 44 t) ("Evidence" 8 t)])
    ("memories" [("Name" 22 t) ("Type" 10 t) ("Description" 48 t) ("File" 30 t)])
    (_ [("Decided" 17 t) ("State" 9 t) ("Kind" 9 t) ("Target" 26 t) ("Title" 36 t) ("Undo" 4 nil)])))

(defun cairn--str (v)
  "V as a display string."
  (cond ((null v) "") ((stringp v) v) (t (format "%s" v))))

(defun cairn--time (v)
  "Display a decision time V (epoch seconds or a string)."
  (cond ((numberp v) (format-time-string "%Y-%m-%d %H:%M" v))
        (t (cairn--str v))))

(defun cairn-cockpit--columns (view row)
  "The column strings of ROW in VIEW."
  (pcase view
    ("candidates" (vector (cairn--str (plist-get row :state)) (cairn--str (plist-get row :kind))
                          (cairn--str (plist-get row :target)) (cairn--str (plist-get row :title))
                          (format "%d" (length (plist-get row :evidence)))))
    ("memories" (vector (cairn--str (plist-get row :name)) (cairn--str (plist-get row :type))
                        (cairn--str (plist-get row :description)) (cairn--str (plist-get row :file))))
    (_ (vector (cairn--time (plist-get row :decided)) (cairn--str (plist-get row :state))
               (cairn--str (plist-get row :kind)) (cairn--str (plist-get row :target))
               (cairn--str (plist-get row :title))
               (if (eq (plist-get row :canUndo) t) "yes" "")))))

(defun cairn-cockpit--revert (&rest _)
  "Fetch status and rows of the current view and redraw."
  (let ((view cairn-cockpit--view) rows)
    (condition-case err
        (let* ((server (cairn-connect cairn-cockpit--workspace))
               (ws (cairn--workspace server)))
          (setq cairn-cockpit--workspace ws
                cairn-cockpit--server-name
                (let ((info (eglot--server-info server)))
                  (string-trim (format "%s %s" (or (plist-get info :name) "cairn")
                                       (or (plist-get info :version) ""))))
                cairn-cockpit--status (cairn-request server :cairn/status (list :workspace ws))
                rows (append (cairn-request server :cairn/cockpit (list :workspace ws :view view)) nil)
                cairn-cockpit--state (format-time-string "updated %H:%M:%S")))
      (error (setq cairn-cockpit--state (concat "error: " (cairn--error-message err)))))
    (setq tabulated-list-format (cairn-cockpit--format view)
          tabulated-list-sort-key nil
          tabulated-list-entries (mapcar (lambda (row) (list row (cairn-cockpit--columns view row))) rows))
    (tabulated-list-init-header)
    (tabulated-list-print t)
    (let ((inhibit-read-only t))
      (save-excursion
        (unless rows
          (goto-char (point-max))
          (insert (propertize (pcase view
                                ("candidates" "  No pending proposals.  D drains the backlog.\n")
                                ("memories" "  No memory topics yet.\n")
                                (_ "  No decisions yet.\n"))
                              'face 'shadow)))))
    (force-mode-line-update)))

(defun cairn-cockpit-refresh-all (&optional workspace)
  "Refresh every cockpit buffer (showing WORKSPACE, when given)."
  (dolist (buf (buffer-list))
    (with-current-buffer buf
      (when (and (derived-mode-p 'cairn-cockpit-mode)
                 (or (null workspace) (equal workspace cairn-cockpit--workspace)))
        (revert-buffer)))))

;;;###autoload
(defun cairn-cockpit (&optional workspace view)
  "Open the memory cockpit `*cairn*' for WORKSPACE (default: this project).
VIEW is \"candidates\" (default), \"memories\" or \"history\".  Returns the buffer."
  (interactive)
  (let* ((server (cairn-connect (or workspace default-directory)))
         (ws (cairn--workspace server))
         (buf (get-buffer-create "*cairn*")))
    (with-current-buffer buf
      (unless (derived-mode-p 'cairn-cockpit-mode) (cairn-cockpit-mode))
      (unless (equal ws cairn-cockpit--workspace) (setq cairn-cockpit--back nil))
      (setq cairn-cockpit--workspace ws
            cairn-cockpit--view (or view cairn-cockpit--view))
      (setq default-directory (file-name-as-directory ws))
      (revert-buffer))
    (pop-to-buffer-same-window buf)
    buf))

(defun cairn-cockpit--row (&rest views)
  "The row at point; error unless the view is one of VIEWS (any when nil)."
  (when (and views (not (member cairn-cockpit--view views)))
    (user-error "cairn: that key works in the %s view" (mapconcat #'capitalize views " or ")))
  (or (tabulated-list-get-id) (user-error "cairn: no row here")))

(defun cairn-cockpit-switch-view (view &optional no-history)
  "Show VIEW; q returns to the current one unless NO-HISTORY."
  (unless (member view cairn-cockpit-views) (user-error "cairn: unknown view %s" view))
  (unless (or no-history (equal view cairn-cockpit--view))
    (push cairn-cockpit--view cairn-cockpit--back))
  (setq cairn-cockpit--view view)
  (revert-buffer)
  (goto-char (point-min))
  (forward-line 1))

(defun cairn-cockpit-next-view (&optional n)
  "Switch to the next view (N views ahead)."
  (interactive "p")
  (let ((i (cl-position cairn-cockpit--view cairn-cockpit-views :test #'equal)))
    (cairn-cockpit-switch-view (nth (mod (+ i (or n 1)) (length cairn-cockpit-views)) cairn-cockpit-views))))

(defun cairn-cockpit-previous-view ()
  "Switch to the previous view."
  (interactive)
  (cairn-cockpit-next-view -1))

(defun cairn-cockpit-choose-view (view)
  "Switch to VIEW, chosen with completion."
  (interactive (list (completing-read "cairn view: " cairn-cockpit-views nil t)))
  (cairn-cockpit-switch-view view))

(defun cairn-cockpit-back ()
  "Return to the previous view, or quit the cockpit window."
  (interactive)
  (if cairn-cockpit--back
      (cairn-cockpit-switch-view (pop cairn-cockpit--back) t)
    (quit-window)))

(defun cairn-cockpit-keys ()
  "Show the cockpit's keys."
  (interactive)
  (with-help-window "*cairn keys*"
    (princ "cairn cockpit keys\n\n")
    (dolist (k cairn-cockpit--keys)
      (princ (format "  %-5s %s\n" (car k) (cdr k))))))

(defun cairn-cockpit--server ()
  "The cockpit's server (started if needed)."
  (cairn-connect cairn-cockpit--workspace))

(defun cairn-cockpit--decide (command argument done)
  "Run COMMAND with ARGUMENT; message DONE, or the server's reason."
  (condition-case err
      (progn (cairn--command-request (cairn-cockpit--server) command (vector argument))
             (message "cairn: %s" done)
             t)
    (jsonrpc-error (message "cairn: %s" (cairn--error-message err)) nil)))

(defun cairn-cockpit-accept ()
  "Accept the proposal at point."
  (interactive)
  (let ((id (plist-get (cairn-cockpit--row "candidates") :id)))
    (cairn-cockpit--decide "cairn.accept" (list :workspace cairn-cockpit--workspace :ids (vector id))
                           (format "accepted %s (u in History undoes it)" id))))

(defun cairn-cockpit-reject ()
  "Reject the proposal at point."
  (interactive)
  (let ((id (plist-get (cairn-cockpit--row "candidates") :id)))
    (cairn-cockpit--decide "cairn.reject" (list :workspace cairn-cockpit--workspace :ids (vector id))
                           (format "rejected %s" id))))

(defun cairn-cockpit-undo ()
  "Undo the decision at point."
  (interactive)
  (let ((row (cairn-cockpit--row "history")))
    (unless (eq (plist-get row :canUndo) t)
      (user-error "cairn: %s cannot be undone (%s)" (plist-get row :id) (plist-get row :state)))
    (cairn-cockpit--decide "cairn.undo" (list :workspace cairn-cockpit--workspace :id (plist-get row :id))
                           (format "undid %s" (plist-get row :id)))))

(defun cairn-cockpit--fetch (row)
  "The `cairn/proposal' details of ROW."
  (cairn--proposal (cairn-cockpit--server) cairn-cockpit--workspace (plist-get row :id)))

(defun cairn-cockpit-diff ()
  "Show the diff of the proposal at point in a `diff-mode' buffer."
  (interactive)
  (cairn--show-proposal (cairn-cockpit--fetch (cairn-cockpit--row "candidates" "history")) t))

(defun cairn-cockpit--file (row)
  "Absolute file name of memory ROW."
  (let ((file (plist-get row :file)))
    (if (file-name-absolute-p file) file (expand-file-name file cairn-cockpit--workspace))))

(defun cairn-cockpit-act ()
  "Act on the row: proposal details and diff, or visit the memory file."
  (interactive)
  (let ((row (cairn-cockpit--row)))
    (if (equal cairn-cockpit--view "memories")
        (find-file-other-window (cairn-cockpit--file row))
      (cairn--show-proposal (cairn-cockpit--fetch row)))))

(defun cairn-cockpit-info ()
  "Show every field of the row at point in an info panel."
  (interactive)
  (let ((row (cairn-cockpit--row)) (buf (get-buffer-create "*cairn info*")))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "cairn %s row\n\n" cairn-cockpit--view))
        (cl-loop for (k v) on row by #'cddr
                 do (insert (format "%-12s %s\n" (substring (symbol-name k) 1)
                                    (cond ((vectorp v) (mapconcat #'cairn--str (append v nil) ", "))
                                          ((eq k :decided) (cairn--time v))
                                          ((eq v :json-false) "no")
                                          ((eq v t) "yes")
                                          (t (cairn--str v))))))
        (special-mode)
        (goto-char (point-min))))
    (display-buffer buf)
    buf))

(provide 'cairn)
;;; cairn.el ends here
