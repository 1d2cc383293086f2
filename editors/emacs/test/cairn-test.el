;;; cairn-test.el --- ERT tests of cairn.el against the real server  -*- lexical-binding: t; -*-

;;; Commentary:

;; Every test starts the real `cairn serve' (the repository's Python,
;; see `cairn-test--server-command') in a fresh temporary workspace,
;; drives it through cairn.el exactly as a user's Emacs would, and
;; shuts it down again.  Waiting is bounded and event driven: each
;; wait re-checks after any output from the server (it logs after
;; every job), up to a deadline.
;;
;; Run them all:
;;   emacs -Q --batch -L <eglot dirs> -L editors/emacs \
;;     -l ert -l editors/emacs/test/cairn-test.el -f ert-run-tests-batch-and-exit

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'cairn)
(require 'cairn-cockpit)
(require 'cairn-gptel)

(defvar gptel-mode)
(defvar gptel-prompt-prefix-alist)

(defconst cairn-test--repo
  (file-name-as-directory
   (expand-file-name "../../.." (file-name-directory (or load-file-name buffer-file-name))))
  "The repository root.")

(defun cairn-test--server-command ()
  "The server command: CAIRN_TEST_PYTHON (or the repo's .venv) -m cairn.server serve."
  (list (or (getenv "CAIRN_TEST_PYTHON") (expand-file-name ".venv/bin/python" cairn-test--repo))
        "-m" "cairn.server" "serve"))

(defconst cairn-test--turns
  '(("From now on never use bare except in this repo: catch the specific exception and log it with context."
     . "Understood: no bare except; I will catch specific exceptions and log them with context.")
    ("Heads-up: the staging database is read-only on Fridays for the weekly snapshot, so never schedule migrations on staging on a Friday."
     . "Noted: no staging migrations on Fridays.")
    ("We always run the test suite with `make check`, never plain pytest, because it sets the timezone."
     . "Got it: `make check` runs the suite."))
  "Realistic turns carrying preferences the extractive engine turns into notes.")

(defvar cairn-test--ws nil "The current test workspace (no trailing slash).")

(defun cairn-test--cleanup (ws)
  "Stop WS's server, kill buffers of its files and the cockpit, delete WS."
  (dolist (buf (buffer-list))
    (with-current-buffer buf
      (when (or (and buffer-file-name (file-in-directory-p buffer-file-name ws))
                (local-variable-p 'cairn-gptel--session-id))
        (set-buffer-modified-p nil)
        (kill-buffer buf))))
  (dolist (name '("*cairn*" "*cairn diff*" "*cairn proposal*" "*cairn info*" "*cairn keys*"))
    (when (get-buffer name) (kill-buffer name)))
  (let ((server (cairn-server ws)))
    (when server (eglot-shutdown server nil 30)))
  (when (bound-and-true-p cairn-mode) (cairn-mode -1))
  (delete-directory ws t))

(defmacro cairn-test--with-workspace (&rest body)
  "Run BODY with a fresh workspace in `cairn-test--ws' and the real server command."
  (declare (indent 0) (debug t))
  `(let* ((cairn-test--ws (directory-file-name (file-truename (make-temp-file "cairn-ert-" t))))
          (cairn-server-command (cairn-test--server-command))
          (cairn-progress-log nil))
     (unwind-protect (progn ,@body)
       (cairn-test--cleanup cairn-test--ws))))

(defun cairn-test--until (what pred &optional timeout)
  "Return PRED's first non-nil value, re-checked after server output; fail after TIMEOUT s."
  (let ((deadline (+ (float-time) (or timeout 120))) value)
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.5))
    (or value (ert-fail (format "timed out waiting for %s" what)))))

(defun cairn-test--file (rel)
  "Absolute name of REL in the workspace."
  (expand-file-name rel cairn-test--ws))

(defun cairn-test--write (rel text)
  "Write TEXT to REL in the workspace."
  (let ((file (cairn-test--file rel)))
    (make-directory (file-name-directory file) t)
    (with-temp-file file (insert text))))

(defun cairn-test--memory-files ()
  "A workspace with a memory index and one topic."
  (cairn-test--write ".agents/memory/MEMORY.md"
                     "# Memory\n\n- [Release](release.md) - how releases are cut\n")
  (cairn-test--write ".agents/memory/release.md"
                     "---\nname: Release\ndescription: how releases are cut\ntype: project\n---\nTag from main only.\n"))

(defun cairn-test--snapshot ()
  "Sorted alist (RELATIVE-NAME . BYTES) of the workspace's Markdown files, state excluded."
  (let (out)
    (dolist (f (directory-files-recursively
                cairn-test--ws "\\.md\\'" nil
                (lambda (dir) (not (equal (file-name-nondirectory dir) ".cairn")))))
      (push (cons (file-relative-name f cairn-test--ws)
                  (with-temp-buffer
                    (set-buffer-multibyte nil)
                    (insert-file-contents-literally f)
                    (buffer-string)))
            out))
    (sort out (lambda (a b) (string< (car a) (car b))))))

(defun cairn-test--feed (session &optional turns)
  "Send TURNS (default `cairn-test--turns') as SESSION through `cairn-turn-completed'."
  (let (parent)
    (cl-loop for (user . assistant) in (or turns cairn-test--turns)
             for i from 0
             do (setq parent (cairn-turn-completed
                              cairn-test--ws session (cairn-turn-id parent user assistant) parent
                              user assistant (format "2025-06-12T10:0%d:00Z" i))))))

(defun cairn-test--settled (&optional min-digests)
  "Wait until nothing is pending or running and at least MIN-DIGESTS (1) digests exist."
  (cairn-test--until
   "digests" (lambda ()
               (let ((st (cairn-status cairn-test--ws)))
                 (and (= 0 (plist-get st :pending)) (= 0 (plist-get st :running))
                      (>= (plist-get st :digests) (or min-digests 1))
                      st)))))

(defun cairn-test--progress-end (token)
  "Wait for the end of progress TOKEN; return its log entry."
  (cairn-test--until
   "the end of the drain's progress"
   (lambda () (cl-find-if (lambda (e) (and (equal (car e) token) (equal (nth 1 e) "end")))
                          cairn-progress-log))))

(defun cairn-test--drain ()
  "Drain the backlog and wait for its progress to end; return the token."
  (let* ((result (cairn-drain-backlog cairn-test--ws))
         (token (plist-get result :progress)))
    (should (stringp token))
    (cairn-test--progress-end token)
    token))

(defun cairn-test--with-proposals ()
  "Memory files, a finished session, a drain: return the status with proposals."
  (cairn-test--memory-files)
  (cairn-test--feed "s1")
  (should (cairn-session-event cairn-test--ws "s1" "session-end"))
  (cairn-test--settled)
  (cairn-test--drain)
  (let ((st (cairn-status cairn-test--ws)))
    (should (> (plist-get st :proposals) 0))
    st))

(defun cairn-test--press (key)
  "Run the command KEY is bound to in the current buffer."
  (let ((cmd (key-binding (kbd key))))
    (should (commandp cmd))
    (call-interactively cmd)))

(defun cairn-test--rows ()
  "Row plists of the cockpit buffer, top to bottom."
  (with-current-buffer "*cairn*"
    (save-excursion
      (goto-char (point-min))
      (let (rows)
        (while (not (eobp))
          (let ((id (tabulated-list-get-id)))
            (when id (push id rows)))
          (forward-line 1))
        (nreverse rows)))))

(defun cairn-test--goto-row (id)
  "Move point in the cockpit to the row whose :id is ID."
  (goto-char (point-min))
  (while (and (not (eobp)) (not (equal (plist-get (tabulated-list-get-id) :id) id)))
    (forward-line 1))
  (should (equal (plist-get (tabulated-list-get-id) :id) id)))

(defun cairn-test--capabilities (server)
  "The capabilities SERVER announced.
Eglot keeps them without a public accessor: the tests' one eglot internal."
  (eglot--capabilities server))

(defun cairn-test--messages ()
  "Text of *Messages*."
  (with-current-buffer (messages-buffer) (buffer-substring-no-properties (point-min) (point-max))))

;;;; Connection and turns

(ert-deftest cairn-connects-and-reports-status ()
  "The server starts through eglot and answers the contract's status counts."
  (cairn-test--with-workspace
    (let ((server (cairn-connect cairn-test--ws)))
      (should (cairn-eglot-server-p server))
      (should (eq server (cairn-connect cairn-test--ws)))
      (should (equal (plist-get (cairn--server-info server) :name) "cairn"))
      (let ((commands (append (plist-get (plist-get (cairn-test--capabilities server) :executeCommandProvider)
                                         :commands)
                              nil)))
        (dolist (c '("cairn.drainBacklog" "cairn.review" "cairn.accept" "cairn.reject" "cairn.undo"
                     "cairn.retry" "cairn.discard" "cairn.dismiss" "cairn.cleanup" "cairn.diagnosticReport"))
          (should (member c commands))))
      (should (equal (cairn--workspace server) cairn-test--ws))
      (let ((st (cairn-status cairn-test--ws)))
        (dolist (k '(:pending :running :retryWaiting :attention :exhausted :digests :proposals))
          (should (integerp (plist-get st k))))
        (should (= 0 (plist-get st :digests)))))))

(ert-deftest cairn-turns-and-session-end-become-digests ()
  "Turns fed with `cairn-turn-completed' are digested once the session ends."
  (cairn-test--with-workspace
    (cairn-test--feed "s1")
    (should (cairn-session-event cairn-test--ws "s1" "session-end"))
    (let ((st (cairn-test--settled)))
      (should (> (plist-get st :digests) 0))
      (should (= 0 (plist-get st :exhausted))))
    (should (directory-files-recursively (cairn-test--file ".cairn/journal") "\\.json\\'"))
    (should-error (cairn-session-event cairn-test--ws "s1" "nap"))))

(ert-deftest cairn-drain-reports-progress ()
  "`cairn-drain-backlog' runs cairn.drainBacklog; $/progress reaches the echo area."
  (cairn-test--with-workspace
    (dolist (s '("a" "b"))
      (cairn-test--feed s)
      (cairn-session-event cairn-test--ws s "compaction"))
    (let* ((token (cairn-test--drain))
           (events (reverse (cl-remove-if-not (lambda (e) (equal (car e) token)) cairn-progress-log)))
           (kinds (mapcar #'cadr events)))
      (should (equal (car kinds) "begin"))
      (should (equal (car (last kinds)) "end"))
      (should (member "report" kinds))
      (should-not (string-match-p "not finished" (or (nth 2 (car (last events))) "")))
      (should (string-match-p "cairn: draining backlog.*(done)" (cairn-test--messages)))
      (should (equal (cairn--lighter) " cairn"))
      (should-not (equal (cairn-test--drain) token)))
    (let ((st (cairn-status cairn-test--ws)))
      (should (= 0 (plist-get st :pending)))
      (should (> (plist-get st :digests) 0)))))

(ert-deftest cairn-gptel-adapter-sends-stable-turns-and-session-events ()
  "The gptel hook sends turns with stable ids; clear and kill end sessions."
  (cairn-test--with-workspace
    (cairn-connect cairn-test--ws)
    (let ((gptel-prompt-prefix-alist '((text-mode . "### ")))
          (buf (generate-new-buffer "*gptel chat*")))
      (with-current-buffer buf
        (text-mode)
        (setq default-directory (file-name-as-directory cairn-test--ws))
        (setq-local gptel-mode t)
        (cl-flet ((exchange (user assistant)
                    (insert "### " user "\n\n")
                    (let ((beg (point)))
                      (insert assistant)
                      (put-text-property beg (point) 'gptel 'response)
                      (insert "\n\n")
                      (cairn-gptel-post-response beg (+ beg (length assistant)))
                      (car (cairn-gptel-turn-at (+ beg (length assistant)))))))
          (pcase-let ((`(,u1 . ,a1) (nth 0 cairn-test--turns))
                      (`(,u2 . ,a2) (nth 1 cairn-test--turns))
                      (`(,u3 . ,a3) (nth 2 cairn-test--turns)))
            (let ((id1 (exchange u1 a1))
                  (id2 (exchange u2 a2)))
              ;; the user's text has the prompt prefix stripped; ids chain parent ids
              (should (equal (cairn-gptel-turns (point-max)) (list (cons u1 a1) (cons u2 a2))))
              (should (equal id1 (cairn-turn-id nil u1 a1)))
              (should (equal id2 (cairn-turn-id id1 u2 a2)))
              (should (equal (cairn-gptel-turn-at (point-max)) (list id2 id1 u2 a2)))
              (let ((first-session cairn-gptel--session-id))
                (should (stringp first-session))
                ;; clearing the buffer ends the session with a "clear" event: its turns are digested
                (erase-buffer)
                (should-not cairn-gptel--session-id)
                (cairn-test--settled 1)
                ;; the same conversation again gets the same ids (stable across re-sends)
                (should (equal (exchange u1 a1) id1))
                (should-not (equal cairn-gptel--session-id first-session))
                (exchange u3 a3))))))
      (let ((before (plist-get (cairn-status cairn-test--ws) :digests)))
        (kill-buffer buf)                 ; session-end
        (cairn-test--settled (1+ before))))))

;;;; Settings and idle maintenance

(ert-deftest cairn-settings-reach-the-server ()
  "The defcustoms arrive as settings: in auto mode a drain applies its proposals."
  (cairn-test--with-workspace
    (let ((cairn-mode-setting "auto"))
      (cairn-test--memory-files)
      (let ((before (cairn-test--snapshot)))
        (cairn-test--feed "s1")
        (cairn-session-event cairn-test--ws "s1" "session-end")
        (cairn-test--settled)
        (cairn-test--drain)
        (should-not (equal (cairn-test--snapshot) before)))
      (cairn-cockpit cairn-test--ws "history")
      (should (cl-some (lambda (r) (equal (plist-get r :state) "applied")) (cairn-test--rows))))))

(ert-deftest cairn-idle-timer-offers-maintenance ()
  "`cairn-mode' arms a repeating idle timer; a tick sends cairn/idle and the server reviews."
  (cairn-test--with-workspace
    (let ((cairn-idle-minutes 0.5))
      (cairn-mode 1)
      (should (timerp cairn--idle-timer))
      (should (timer--idle-delay cairn--idle-timer))
      (should (timer--repeat-delay cairn--idle-timer))
      (should (= (float-time (timer--time cairn--idle-timer)) 30.0))
      (cairn-test--memory-files)
      (cairn-test--feed "s1")
      (cairn-session-event cairn-test--ws "s1" "session-end")
      (should (= 0 (plist-get (cairn-test--settled) :proposals)))
      ;; not idle long enough for the server's idleMinutes: nothing happens
      (should (memq (cairn-server cairn-test--ws) (cairn-idle-tick 29)))
      ;; idle long enough: one maintenance opportunity (processing, review, cleanup)
      (should (memq (cairn-server cairn-test--ws) (cairn-idle-tick 31)))
      (cairn-test--until "proposals from the idle review"
                         (lambda () (> (plist-get (cairn-status cairn-test--ws) :proposals) 0)))
      (cairn-mode -1)
      (should-not cairn--idle-timer))))

;;;; Registration, messages

(ert-deftest cairn-mode-registers-memory-files-with-eglot ()
  "Memory and instruction files open in `cairn-memory-mode', managed by the cairn server."
  (cairn-test--with-workspace
    (cairn-mode 1)
    (cairn-test--memory-files)
    (cairn-test--write "AGENTS.md" "# Agents\n")
    (cairn-test--write "CLAUDE.md" "# Claude\n")
    (cairn-test--write "notes.md" "# Notes\n")
    (let ((server (cairn-connect cairn-test--ws)))
      (dolist (rel '(".agents/memory/MEMORY.md" ".agents/memory/release.md" "AGENTS.md" "CLAUDE.md"))
        (with-current-buffer (find-file-noselect (cairn-test--file rel))
          (should (eq major-mode 'cairn-memory-mode))
          (should (eq (eglot-current-server) server))))
      (with-current-buffer (find-file-noselect (cairn-test--file "notes.md"))
        (should-not (eq major-mode 'cairn-memory-mode))))
    (cairn-mode -1)
    (should-not (rassq 'cairn-memory-mode auto-mode-alist))))

(ert-deftest cairn-show-message-appears-once ()
  "A window/showMessage (e.g. an exhausted capture) is shown once per connection."
  (cairn-test--with-workspace
    (let ((server (cairn-connect cairn-test--ws))
          (text "cairn: 1 capture(s) used all their attempts (cap-test); run cairn.retry or cairn.discard"))
      (eglot-handle-notification server 'window/showMessage :type 2 :message text)
      (eglot-handle-notification server 'window/showMessage :type 2 :message text)
      (let ((messages (cairn-test--messages)) (count 0) (start 0))
        (while (string-match (regexp-quote text) messages start)
          (setq count (1+ count) start (match-end 0)))
        (should (= count 1))))))

;;;; Cockpit (needs proposals from the memory consolidation jobs)

(ert-deftest cairn-cockpit-accept-then-undo-restores-the-bytes ()
  "Accept a candidate from the cockpit, then undo it from History: files change, then come back."
  (cairn-test--with-workspace
    (let ((status (cairn-test--with-proposals))
          (before (cairn-test--snapshot)))
      (with-current-buffer (cairn-cockpit cairn-test--ws)
        (should (eq major-mode 'cairn-cockpit-mode))
        (should (equal cairn-cockpit--view "candidates"))
        (should (equal header-line-format '(:eval (cairn-cockpit--header))))
        (let ((header (cairn-cockpit--header)))
          (should (string-match-p (regexp-quote (abbreviate-file-name cairn-test--ws)) header))
          (should (string-match-p "\\[Candidates\\]" header))
          (should (string-match-p "\\` cairn [0-9.]+ @ " header))
          (should (string-match-p (format "proposals %d" (plist-get status :proposals)) header))
          (should (string-match-p "digests [1-9]" header)))
        (let* ((rows (cairn-test--rows))
               (id (plist-get (car rows) :id)))
          (should rows)
          (should (cl-every (lambda (r) (member (plist-get r :state) '("pending" "stale"))) rows))
          (cairn-test--goto-row id)
          (cairn-test--press "a")
          (let ((accepted (cairn-test--snapshot)))
            (should-not (equal accepted before))
            (should-not (member id (mapcar (lambda (r) (plist-get r :id)) (cairn-test--rows))))
            ;; TAB twice: Memories, then History
            (cairn-test--press "TAB")
            (should (equal cairn-cockpit--view "memories"))
            (cairn-test--press "TAB")
            (should (equal cairn-cockpit--view "history"))
            (cairn-test--goto-row id)
            (should (equal (plist-get (tabulated-list-get-id) :state) "applied"))
            (should (eq (plist-get (tabulated-list-get-id) :canUndo) t))
            (cairn-test--press "u")
            (should (equal (cairn-test--snapshot) before))
            (cairn-test--goto-row id)
            (should (equal (plist-get (tabulated-list-get-id) :state) "undone"))
            (should-error (cairn-test--press "u") :type 'user-error))
          ;; q goes back through the views, then quits
          (cairn-test--press "q")
          (should (equal cairn-cockpit--view "memories"))
          (cairn-test--press "q")
          (should (equal cairn-cockpit--view "candidates"))
          (should-error (cairn-test--press "u") :type 'user-error))))))

(ert-deftest cairn-cockpit-diff-info-reject-and-memories ()
  "d shows a diff-mode buffer, i the info panel, RET details, r rejects; Memories visits files."
  (cairn-test--with-workspace
    (cairn-test--with-proposals)
    (cairn-mode 1)
    (let ((before (cairn-test--snapshot)))
      (with-current-buffer (cairn-cockpit cairn-test--ws)
        (let ((id (plist-get (car (cairn-test--rows)) :id)))
          (cairn-test--goto-row id)
          (cairn-test--press "d")
          (with-current-buffer "*cairn diff*"
            (should (eq major-mode 'diff-mode))
            (should (string-match-p "^@@ " (buffer-string)))
            (should (string-match-p "^\\+\\+\\+ " (buffer-string))))
          (cairn-test--press "i")
          (with-current-buffer "*cairn info*"
            (should (string-match-p (concat "^id +" (regexp-quote id)) (buffer-string))))
          (cairn-test--press "RET")
          (with-current-buffer "*cairn proposal*"
            (should (eq major-mode 'diff-mode))
            (should (string-match-p (concat "^id +" (regexp-quote id)) (buffer-string)))
            (should (string-match-p "^@@ " (buffer-string))))
          (cairn-test--press "?")
          (with-current-buffer "*cairn keys*"
            (should (string-match-p "accept the proposal" (buffer-string))))
          (cairn-test--press "r")
          (should (equal (cairn-test--snapshot) before))
          (cairn-cockpit-switch-view "history")
          (cairn-test--goto-row id)
          (should (equal (plist-get (tabulated-list-get-id) :state) "rejected"))
          (cairn-cockpit-switch-view "memories")
          (let ((release (cl-find "Release" (cairn-test--rows)
                                  :key (lambda (r) (plist-get r :name)) :test #'equal)))
            (should release)
            (should (equal (plist-get release :type) "project"))
            (should (equal (plist-get release :description) "how releases are cut"))
            (goto-char (point-min))
            (while (not (equal (plist-get (tabulated-list-get-id) :name) "Release")) (forward-line 1))
            (cairn-test--press "RET")
            (should (equal (buffer-file-name (window-buffer (selected-window)))
                           (cairn-test--file ".agents/memory/release.md")))))))))

(ert-deftest cairn-code-actions-accept-a-proposal-in-a-memory-file ()
  "eglot's code actions in MEMORY.md offer the proposal; executing Accept writes the file."
  (cairn-test--with-workspace
    (cairn-test--with-proposals)
    (cairn-mode 1)
    (let* ((server (cairn-server cairn-test--ws))
           (index (cairn-test--file ".agents/memory/MEMORY.md"))
           (before (cairn-test--snapshot)))
      (with-current-buffer (find-file-noselect index)
        (should (eq major-mode 'cairn-memory-mode))
        (should (eq (eglot-current-server) server))
        (let* ((actions (eglot-code-actions (point-min) (point-min)))
               (titles (mapcar (lambda (a) (plist-get a :title)) actions))
               (accept (cl-find-if (lambda (a) (string-match-p "Accept" (plist-get a :title))) actions))
               (show (cl-find-if (lambda (a) (string-match-p "Show diff" (plist-get a :title))) actions)))
          (should (cl-some (lambda (tt) (string-match-p "Reject" tt)) titles))
          (should accept)
          (should show)
          (cairn-execute-action server show)
          (with-current-buffer "*cairn diff*"
            (should (string-match-p "MEMORY.md" (buffer-string))))
          (should (equal (cairn-test--snapshot) before))
          (cairn-execute-action server accept)
          (should-not (equal (cairn-test--snapshot) before))
          ;; the unmodified buffer follows the file
          (should (equal (buffer-substring-no-properties (point-min) (point-max))
                         (with-temp-buffer (insert-file-contents index) (buffer-string)))))))))

;;;; Remember

(ert-deftest cairn-remember-sends-the-region-and-names-the-proposal ()
  "`cairn-remember' sends the region (or TEXT); the answer names the pending proposal."
  (cairn-test--with-workspace
    (make-directory (cairn-test--file ".cairn") t)
    (with-temp-buffer
      (setq default-directory (file-name-as-directory cairn-test--ws))
      (insert "Never deploy on a Friday without a rollback plan.")
      (transient-mark-mode 1)
      (set-mark (point-min))
      (goto-char (point-max))
      (activate-mark)
      (let* ((result (call-interactively #'cairn-remember))
             (proposals (append (plist-get result :proposals) nil)))
        (should (= 1 (length proposals)))
        (should (equal (plist-get (car proposals) :state) "pending"))
        (should (string-match-p "feedback memory" (plist-get (car proposals) :title)))
        (should (string-match-p (regexp-quote (plist-get (car proposals) :id)) (cairn-test--messages)))))
    (let ((result (cairn-remember "Release tags are signed with the team key" "project" cairn-test--ws)))
      (should (string-match-p "project memory" (plist-get (aref (plist-get result :proposals) 0) :title))))
    (should (= 2 (plist-get (cairn-status cairn-test--ws) :proposals)))
    (dolist (bad '(("" nil) ("two words" "opinion")))
      (let ((err (should-error (cairn-remember (car bad) (cadr bad) cairn-test--ws))))
        (should (string-match-p "E_USAGE" (cairn--error-message err)))))))

(provide 'cairn-test)
;;; cairn-test.el ends here
