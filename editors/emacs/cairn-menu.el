;;; cairn-menu.el --- The cairn menu, jobs and proposal editing  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The cairn maintainers

;; Author: The cairn maintainers
;; Maintainer: The cairn maintainers
;; URL: https://github.com/cairn-journal/cairn
;; Version: 0.1.0
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

;; `cairn-dispatch' (? or h in the cockpit) is the cairn menu: the
;; cockpit's keys and the global commands (review, drain, jobs, accept
;; or show a proposal by id with completion, edit before accept).  It
;; is a transient menu when the transient package is available (it
;; ships with Emacs 29, and from ELPA for Emacs 28) and
;; `cairn-use-transient' is non-nil; otherwise a plain key help whose
;; next key runs the command.
;;
;; `cairn-journal' lists the public journal's digests (RET: a digest's
;; notes with the turns each came from).
;;
;; `cairn-jobs' lists the server's maintenance jobs: retry, discard or
;; dismiss the ones that failed, as the cockpit's header suggests.
;;
;; `cairn-edit-proposal' opens a pending proposal's proposed text in an
;; editable buffer: C-c C-c accepts the edited version through the
;; server's checked path (`cairn.acceptEdited'), C-c C-k aborts.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tabulated-list)
(require 'cairn)

(declare-function cairn-cockpit--row "cairn-cockpit" (&rest views))
(declare-function cairn-cockpit--at-view "cairn-cockpit" ())
(declare-function transient-setup "transient" (&optional name layout edit &rest params))
(declare-function flymake-diag-region "flymake" (buffer line &optional col))
(declare-function flymake-make-diagnostic "flymake" (locus beg end type text &optional data overlay-properties))
(defvar flymake-diagnostic-functions)
(defvar cairn-cockpit--keys)

(defcustom cairn-use-transient t
  "When non-nil, `cairn-dispatch' is a transient menu if transient is installed.
nil, or no transient package, shows a plain key help instead."
  :type 'boolean
  :group 'cairn)

;;;; Proposals by id

(defun cairn--candidates (workspace)
  "The pending proposals of WORKSPACE (cockpit rows)."
  (let ((server (cairn-connect workspace)))
    (append (cairn-request server :cairn/cockpit
                           (list :workspace (cairn--workspace server) :view "candidates"))
            nil)))

(defun cairn-read-proposal-id (workspace &optional prompt)
  "Read a pending proposal id of WORKSPACE with completion, PROMPT first.
Each candidate is the id followed by the title, so typing part of a
title finds it too; the newest proposal comes first (the default)."
  (let* ((rows (or (cairn--candidates workspace) (user-error "No pending proposals")))
         (table (mapcar (lambda (r) (cons (format "%s  %s" (plist-get r :id) (or (plist-get r :title) ""))
                                          (plist-get r :id)))
                        rows))
         (collection (lambda (string pred action)
                       (if (eq action 'metadata)
                           '(metadata (display-sort-function . identity) (cycle-sort-function . identity))
                         (complete-with-action action table string pred))))
         (choice (completing-read (or prompt "cairn proposal: ") collection nil t nil nil (caar table))))
    (or (cdr (assoc choice table))
        (car (split-string choice)))))

(defun cairn--read-workspace-and-id (prompt)
  "Interactive arguments (WORKSPACE ID) with PROMPT for the id."
  (let ((ws (cairn-read-workspace current-prefix-arg)))
    (list ws (cairn-read-proposal-id ws prompt))))

;;;###autoload
(defun cairn-accept-proposal (workspace id)
  "Accept proposal ID of WORKSPACE (read with completion)."
  (interactive (cairn--read-workspace-and-id "Accept proposal: "))
  (cairn-command-async workspace "cairn.accept" (list :workspace workspace :ids (vector id))
                       (lambda (_result) (message "cairn: accepted %s" id))))

;;;###autoload
(defun cairn-show-proposal (workspace id)
  "Show proposal ID of WORKSPACE (read with completion): details and diff."
  (interactive (cairn--read-workspace-and-id "Show proposal: "))
  (let ((server (cairn-connect workspace)))
    (cairn--show-proposal (cairn--proposal server (cairn--workspace server) id) nil
                          (cairn--workspace server))))

;;;###autoload
(defun cairn-review (workspace)
  "Queue a general review of WORKSPACE now (`cairn.review')."
  (interactive (list (cairn-read-workspace current-prefix-arg)))
  (cairn-command workspace "cairn.review" (list :workspace workspace))
  (message "cairn: review queued; the cockpit refreshes when it is done"))

;;;; Edit before accept

(defvar-local cairn-edit--id nil "The proposal whose text this buffer edits.")
(defvar-local cairn-edit--workspace nil "The workspace of `cairn-edit--id'.")

(defvar cairn-edit-keys
  (let ((map (make-sparse-keymap)))
    (define-key map "\C-c\C-c" #'cairn-edit-accept)
    (define-key map "\C-c\C-k" #'cairn-edit-abort)
    map)
  "Keys of a buffer editing a proposal's text (a buffer-local map).")

;;;###autoload
(defun cairn-edit-proposal (workspace id)
  "Edit the proposed text of proposal ID in WORKSPACE before accepting it.
The buffer holds the text the proposal would write; \\<cairn-edit-keys>\\[cairn-edit-accept] accepts
the edited version through the same checked path (a new proposal with
the reviewed before-state), \\[cairn-edit-abort] aborts.  Return the buffer."
  (interactive (cairn--read-workspace-and-id "Edit proposal: "))
  (let* ((server (cairn-connect workspace))
         (ws (cairn--workspace server))
         (proposal (cairn--proposal server ws id))
         (edit (or (plist-get proposal :edit)
                   (user-error "Proposal %s cannot be edited (%s, or it writes several files)"
                               id (plist-get proposal :state))))
         (buf (get-buffer-create (format "*cairn edit: %s*" id))))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (plist-get edit :text)))
      (if (fboundp 'markdown-mode) (funcall 'markdown-mode) (text-mode))
      (setq cairn-edit--id id
            cairn-edit--workspace ws)
      (cairn--use-keys cairn-edit-keys)
      (set-buffer-modified-p nil)
      ;; the keys first: a narrow window cuts the end of a header line, never its start
      (setq header-line-format
            (substitute-command-keys
             (format "\\<cairn-edit-keys>\\[cairn-edit-accept] accept  \\[cairn-edit-abort] abort  | cairn: %s (%s)"
                     (string-replace "%" "%%" (plist-get edit :path)) id)))
      (cairn-edit--show-index (plist-get edit :index))
      (require 'flymake)
      (add-hook 'flymake-diagnostic-functions #'cairn-edit-flymake nil t)
      (flymake-mode 1)
      (goto-char (point-min)))
    (save-current-buffer (select-window (display-buffer buf)))
    buf))

;;;; Edit before accept: the index lines and the live check

(defvar-local cairn-edit--index-overlay nil
  "Overlay at the top of an edit buffer showing the index lines the accept writes.")

(defun cairn-edit--show-index (index)
  "Show INDEX, the index lines the accept would write, above the edited text.
INDEX is a vector or list of plists (:index :file :before :after)."
  (let ((lines (cl-loop for e in (append index nil)
                        for before = (plist-get e :before)
                        for after = (plist-get e :after)
                        unless (equal before after)
                        collect (format "%s changes too:\n%s%s"
                                        (plist-get e :index)
                                        (if before (format "  - %s\n" before) "")
                                        (if after (format "  + %s\n" after) "")))))
    (unless (overlayp cairn-edit--index-overlay)
      (setq cairn-edit--index-overlay (make-overlay (point-min) (point-min) nil t nil)))
    (overlay-put cairn-edit--index-overlay 'before-string
                 (and lines (propertize (concat (string-join lines "") "\n") 'face 'shadow)))))

(defun cairn-edit-flymake (report-fn &rest _)
  "Check an edit buffer's text as the accept would (a Flymake backend).
The server does the check (`cairn/checkEdited').  Front matter the
accept would refuse (`E_TOPIC_FRONT_MATTER') is a diagnostic on its
line; the index lines shown above the text follow the edited name and
description.  REPORT-FN as Flymake gives it."
  (let ((buf (current-buffer))
        (server (and cairn-edit--workspace (cairn-server cairn-edit--workspace))))
    (if (not (and server cairn-edit--id))
        (funcall report-fn nil)
      (jsonrpc-async-request
       server :cairn/checkEdited
       (list :workspace cairn-edit--workspace :id cairn-edit--id
             :text (buffer-substring-no-properties (point-min) (point-max)))
       :success-fn
       (lambda (answer)
         (when (buffer-live-p buf)
           (with-current-buffer buf
             (cairn-edit--show-index (plist-get answer :index))
             (funcall report-fn
                      (cl-loop for p in (append (plist-get answer :problems) nil)
                               for line = (plist-get p :line)
                               for region = (flymake-diag-region buf (if (numberp line) line 1))
                               collect (flymake-make-diagnostic
                                        buf (car region) (cdr region) :error
                                        (format "%s: %s" (plist-get p :code) (plist-get p :message))))))))
       :error-fn (lambda (err)
                   (funcall report-fn :panic :explanation (format "%s" (or (plist-get err :message) err))))
       :timeout-fn (lambda () (funcall report-fn :panic :explanation "cairn/checkEdited timed out"))))))

(defvar-local cairn-edit--accepting nil
  "Non-nil while the edited text of this buffer waits for the server's answer.")

(defun cairn-edit--editable (buf)
  "Make the edit buffer BUF editable again: its text was not accepted."
  (when (buffer-live-p buf)
    (with-current-buffer buf
      (setq cairn-edit--accepting nil
            buffer-read-only nil))))

(defun cairn-edit-accept ()
  "Accept the edited text of this buffer's proposal without blocking Emacs.
The buffer is read-only while the server checks and writes the text;
once it answered, the buffer is killed.  When the server refuses (the
proposal was decided meanwhile, the file changed), the buffer stays
with the edited text and the echo area says why."
  (interactive)
  (unless cairn-edit--id (user-error "This buffer edits no cairn proposal"))
  (when cairn-edit--accepting (user-error "Already accepting; wait for the server's answer"))
  (let ((id cairn-edit--id)
        (buf (current-buffer)))
    (setq cairn-edit--accepting t
          buffer-read-only t)
    (condition-case err
        (cairn-command-async
         cairn-edit--workspace "cairn.acceptEdited"
         (list :workspace cairn-edit--workspace :id id
               :text (buffer-substring-no-properties (point-min) (point-max)))
         (lambda (result)
           (when (buffer-live-p buf)
             (with-current-buffer buf
               (set-buffer-modified-p nil)
               (let ((win (get-buffer-window buf)))
                 (if win (quit-window t win) (kill-buffer buf)))))
           (message "cairn: accepted your version of %s as %s (u in History undoes it)"
                    id (plist-get (plist-get result :result) :id)))
         (lambda (_text) (cairn-edit--editable buf)))
      ;; not sent (no server, C-g while it starts): the text stays editable
      (t (cairn-edit--editable buf)
         (signal (car err) (cdr err))))
    (message "cairn: accepting your version of %s..." id)
    nil))

(defun cairn-edit-abort ()
  "Abort editing this buffer's proposal: nothing is decided."
  (interactive)
  (set-buffer-modified-p nil)
  (quit-window t)
  (message "cairn: edit aborted; the proposal is still pending"))

;;;; Jobs

(defvar-local cairn-jobs--workspace nil "The workspace whose jobs are listed.")

(defvar cairn-jobs-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map "r" #'cairn-jobs-retry)
    (define-key map "k" #'cairn-jobs-discard)
    (define-key map "d" #'cairn-jobs-dismiss)
    (define-key map "g" #'revert-buffer)
    (define-key map "q" #'quit-window)
    map)
  "Keys of the cairn jobs list.")

(define-derived-mode cairn-jobs-mode tabulated-list-mode "Cairn-Jobs"
  "The cairn server's maintenance jobs: r retry, k discard, d dismiss.
\\{cairn-jobs-mode-map}"
  (setq tabulated-list-format [("Job" 16 t) ("Kind" 10 t) ("State" 14 t) ("Tries" 5 t) ("Next try" 8 t)
                               ("Last error (why it waits)" 30 t)]
        tabulated-list-padding 2)
  (setq-local revert-buffer-function #'cairn-jobs--revert)
  (tabulated-list-init-header))

(defun cairn-jobs--revert (&rest _)
  "Fetch the jobs and redraw."
  (let* ((server (cairn-connect cairn-jobs--workspace))
         (ws (cairn--workspace server))
         (snap (cairn-request server :cairn/jobs nil))
         (rows (cl-remove-if-not (lambda (r) (member (plist-get r :workspace) (list nil ws)))
                                 (append (plist-get snap :jobs) (plist-get snap :dismissed) nil))))
    (setq tabulated-list-entries
          (mapcar (lambda (r)
                    (list r (vector (format "%s" (plist-get r :id)) (format "%s" (plist-get r :kind))
                                    (format "%s" (plist-get r :state))
                                    (format "%s" (or (plist-get r :attempts) ""))
                                    (cairn-jobs--next r)
                                    (cairn-jobs--why r))))
                  rows))
    (tabulated-list-print t)
    (unless rows
      (let ((inhibit-read-only t))
        (save-excursion
          (goto-char (point-max))
          (insert (substitute-command-keys
                   "  No maintenance jobs: nothing is queued, running or failed.\n  \\<cairn-jobs-mode-map>\\[revert-buffer] refreshes; a failed job shows here with its code, why it waits and its next try.\n")))))))

(defun cairn-jobs--next (row)
  "Return the time of ROW's next try: a clock time, \"now\", or \"-\" (none planned)."
  (let ((at (plist-get row :notBefore)))
    (cond ((numberp at) (if (<= at (float-time)) "now" (format-time-string "%H:%M:%S" at)))
          ((member (plist-get row :state) '("idle" "pending")) "now")
          (t "-"))))

(defun cairn-jobs--why (row)
  "ROW's last error code and why the job waits (r retries it, k discards it)."
  (let ((code (plist-get row :lastError))
        (waiting (plist-get row :waiting)))
    (string-join (delq nil (list (and code (format "%s" code))
                                 (and waiting (format "(%s)" waiting))
                                 (and (member (plist-get row :state) '("attention" "exhausted"))
                                      "waits for you: r retries, k discards")))
                 " ")))

;;;###autoload
(defun cairn-jobs (workspace)
  "List the maintenance jobs of WORKSPACE's server.  Return the buffer."
  (interactive (list (cairn-read-workspace current-prefix-arg)))
  (let* ((ws (cairn--workspace (cairn-connect workspace)))
         (buf (get-buffer-create (format "*cairn jobs: %s*" (file-name-nondirectory ws)))))
    (with-current-buffer buf
      (cairn-jobs-mode)
      (setq cairn-jobs--workspace ws
            default-directory (file-name-as-directory ws))
      (revert-buffer))
    (pop-to-buffer buf)
    buf))

(defun cairn-jobs--act (command)
  "Run COMMAND on the job at point; refresh."
  (let ((row (or (tabulated-list-get-id) (user-error "No job here"))))
    (cairn-command cairn-jobs--workspace command (list :jobId (plist-get row :id)))
    (message "cairn: %s %s" command (plist-get row :id))
    (revert-buffer)))

(defun cairn-jobs-retry ()
  "Make the job at point eligible now, with a fresh attempt budget."
  (interactive)
  (cairn-jobs--act "cairn.retry"))

(defun cairn-jobs-discard ()
  "Drop the job at point, after confirmation."
  (interactive)
  (let ((row (or (tabulated-list-get-id) (user-error "No job here"))))
    (when (y-or-n-p (format "Discard job %s (%s) for good (it will not run again)? " (plist-get row :id)
                            (plist-get row :kind)))
      (cairn-jobs--act "cairn.discard"))))

(defun cairn-jobs-dismiss ()
  "Move the failed job at point to the dismissed history."
  (interactive)
  (cairn-jobs--act "cairn.dismiss"))

;;;; Journal

(defvar-local cairn-journal--workspace nil "The workspace whose journal is listed.")

(defvar cairn-journal-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map "\r" #'cairn-journal-show)
    (define-key map "g" #'revert-buffer)
    (define-key map "q" #'quit-window)
    map)
  "Keys of the cairn journal list.")

(define-derived-mode cairn-journal-mode tabulated-list-mode "Cairn-Journal"
  "The public journal's digests, newest first; RET shows a digest's notes.
\\{cairn-journal-mode-map}"
  (setq tabulated-list-format [("Created" 16 t) ("Trigger" 11 t) ("Notes" 5 t :right-align t)
                               ("Turns" 5 t :right-align t) ("Digest" 20 t) ("First note" 20 t)]
        tabulated-list-padding 2)
  (setq-local revert-buffer-function #'cairn-journal--revert)
  (tabulated-list-init-header))

(defun cairn-journal--revert (&rest _)
  "Fetch the digests and redraw."
  (let* ((server (cairn-connect cairn-journal--workspace))
         (rows (append (cairn-request server :cairn/journal
                                      (list :workspace (cairn--workspace server)))
                       nil)))
    (setq tabulated-list-entries
          (mapcar (lambda (r)
                    (let ((notes (append (plist-get r :notes) nil)))
                      (list r (vector (format-time-string "%Y-%m-%d %H:%M" (or (plist-get r :created) 0))
                                      (format "%s" (or (plist-get r :trigger) ""))
                                      (format "%d" (length notes))
                                      (format "%d" (length (plist-get r :turn_ids)))
                                      (format "%s" (plist-get r :id))
                                      (format "%s" (or (plist-get (car notes) :title) ""))))))
                  rows))
    (tabulated-list-print t)))

;;;###autoload
(defun cairn-journal (workspace)
  "List the public journal's digests of WORKSPACE.  Return the buffer."
  (interactive (list (cairn-read-workspace current-prefix-arg)))
  (let* ((ws (cairn--workspace (cairn-connect workspace)))
         (buf (get-buffer-create (format "*cairn journal: %s*" (file-name-nondirectory ws)))))
    (with-current-buffer buf
      (cairn-journal-mode)
      (setq cairn-journal--workspace ws
            default-directory (file-name-as-directory ws))
      (revert-buffer)
      (goto-char (point-min))
      (while (and (not (eobp)) (not (tabulated-list-get-id))) (forward-line 1)))
    (pop-to-buffer buf)
    buf))

(defun cairn-journal-show ()
  "Show the digest at point: its notes and the turn ids of each."
  (interactive)
  (let ((row (or (tabulated-list-get-id) (user-error "No digest here")))
        (buf (get-buffer-create "*cairn digest*")))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "digest   %s\ncapture  %s\nsession  %s\ntrigger  %s\ncreated  %s\nturns    %s\n"
                        (plist-get row :id) (plist-get row :capture) (plist-get row :session_id)
                        (plist-get row :trigger)
                        (format-time-string "%Y-%m-%d %H:%M:%S" (or (plist-get row :created) 0))
                        (mapconcat #'identity (append (plist-get row :turn_ids) nil) ", ")))
        (dolist (note (append (plist-get row :notes) nil))
          (insert (format "\n* %s (%s)\n%s\n  turns: %s\n" (plist-get note :title) (plist-get note :type)
                          (plist-get note :body)
                          (mapconcat #'identity (append (plist-get note :turn_ids) nil) ", "))))
        (special-mode)
        (goto-char (point-min))))
    (display-buffer buf)
    buf))

;;;; The menu

(defconst cairn-dispatch-commands
  '(("c" "cockpit" cairn-cockpit)
    ("R" "review now" cairn-review)
    ("D" "drain the backlog" cairn-drain-backlog)
    ("j" "jobs: retry, discard, dismiss" cairn-jobs)
    ("J" "journal: digests and their turns" cairn-journal)
    ("A" "accept a proposal by id" cairn-accept-proposal)
    ("S" "show a proposal by id" cairn-show-proposal)
    ("E" "edit a proposal, then accept it" cairn-edit-proposal))
  "The global commands of `cairn-dispatch': (KEY DESCRIPTION COMMAND).")

(defvar cairn-dispatch-map
  (let ((map (make-sparse-keymap)))
    (dolist (c cairn-dispatch-commands)
      (define-key map (car c) (nth 2 c)))
    map)
  "Keys of the plain cairn menu (when transient is not used).
In the cockpit the menu's next key runs a global command only where
the cockpit has no key of its own for it: see `cairn--dispatch-globals'.")

(defconst cairn--cockpit-menu
  '(["Flag, then x"
     ("a" "flag A: accept" cairn-cockpit-flag-accept)
     ("r" cairn-cockpit-flag-reject :description cairn--menu-r-description)
     ("u" "flag U: undo / un-reject" cairn-cockpit-flag-undo)
     ("c" "flag C: topic still true" cairn-cockpit-flag-confirm)
     ("x" "execute the flags" cairn-cockpit-execute)
     ("K" "accept now, keeping both" cairn-cockpit-accept-keeping-both)
     ("e" "edit, then accept" cairn-cockpit-edit)]
    ["Look"
     ("RET" "details" cairn-cockpit-act)
     ("d" "diff" cairn-cockpit-diff)
     ("i" "info" cairn-cockpit-info)
     ("w" "evidence" cairn-cockpit-evidence)
     ("V" "verify memory" cairn-cockpit-verify)
     ("F" "follow point" cairn-cockpit-follow)]
    ["Views, marks"
     ("TAB" "next view" cairn-cockpit-next-view)
     ("o" "overview" cairn-cockpit-overview)
     ("v" "choose a view" cairn-cockpit-choose-view)
     ("l" "previous view" cairn-cockpit-back)
     ("g" "refresh" revert-buffer)
     ("m" "mark / unmark" cairn-cockpit-mark)
     ("U" "clear marks and flags" cairn-cockpit-unmark-all)])
  "The cockpit's columns of the transient cairn menu, side by side.
Three columns, so that the menu is no wider than 80 columns and no
taller than the cockpit's keys need.")

(defun cairn--cockpit-menu-keys ()
  "The keys of the cockpit's part of the transient menu."
  (cl-loop for column in cairn--cockpit-menu
           append (mapcar #'car (cdr (append column nil)))))

(defun cairn--dispatch-globals ()
  "Return the global commands of the plain cairn menu in this buffer.
Each is (KEY DESCRIPTION COMMAND), as in `cairn-dispatch-commands'.
In the cockpit a global command whose key the cockpit has for its
own is left out: c flags a topic as confirmed there (the cockpit is
already open), D drains there as well."
  (if (derived-mode-p 'cairn-cockpit-mode)
      (cl-remove-if (lambda (c) (assoc (car c) cairn-cockpit--keys)) cairn-dispatch-commands)
    cairn-dispatch-commands))

(defun cairn--transient-p ()
  "Non-nil if `cairn-dispatch' is to be a transient menu."
  (and cairn-use-transient (require 'transient nil t)))

(defun cairn--menu-r-description ()
  "The menu's label of r: it retires a topic in Memories, else rejects."
  (if (and (derived-mode-p 'cairn-cockpit-mode)
           (equal (cairn-cockpit--at-view) "memories"))
      "flag R: retire the topic"
    "flag R: reject"))

(defun cairn--define-transient ()
  "Define the transient prefix `cairn-transient' (once transient is loaded).
Defined at run time so that the package neither needs nor loads
transient until the menu is first used.  In the cockpit, the global
command whose key the cockpit's columns use (c: the cockpit itself)
is hidden, so that each key shows once and runs what it says."
  (unless (fboundp 'cairn-transient)
    (let* ((cockpit-keys (cairn--cockpit-menu-keys))
           (suffix (lambda (c)
                     (append (list (car c) (nth 1 c) (nth 2 c))
                             (and (member (car c) cockpit-keys) '(:if-not-derived cairn-cockpit-mode))))))
      ;; columns side by side (a vector of vectors), so the menu stays short on any frame
      (eval `(transient-define-prefix cairn-transient ()
               "The cairn menu."
               [["cairn"
                 ,@(mapcar suffix (cl-subseq cairn-dispatch-commands 0 5))]
                ["Proposals by id"
                 ,@(mapcar suffix (nthcdr 5 cairn-dispatch-commands))
                 ("q" "quit this menu" transient-quit-one)]]
               [:if-derived cairn-cockpit-mode ,@cairn--cockpit-menu])
            t))))

;;;###autoload
(defun cairn-dispatch ()
  "The cairn menu: the cockpit's keys and the global commands.
A transient menu when transient is available and `cairn-use-transient'
is non-nil; otherwise a key help whose next key runs the command.
Each key shows once and runs what it says: in the cockpit, c flags a
topic as confirmed (the cockpit is open already), elsewhere it opens
the cockpit."
  (interactive)
  (if (cairn--transient-p)
      (progn (cairn--define-transient)
             (call-interactively 'cairn-transient))
    (let ((globals (cairn--dispatch-globals))
          (map (make-sparse-keymap)))
      (with-help-window "*cairn keys*"
        (princ "cairn menu: press a key\n\n")
        (dolist (c globals)
          (princ (format "  %-5s %s\n" (car c) (nth 1 c))))
        (when (derived-mode-p 'cairn-cockpit-mode)
          (princ "\ncairn cockpit keys\n\n")
          (dolist (k cairn-cockpit--keys)
            (princ (format "  %-5s %s\n" (car k) (cdr k))))))
      (dolist (c globals)
        (define-key map (car c) (lookup-key cairn-dispatch-map (car c))))
      (set-transient-map map))))

(provide 'cairn-menu)
;;; cairn-menu.el ends here
