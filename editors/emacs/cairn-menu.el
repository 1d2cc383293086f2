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
(declare-function transient-setup "transient" (&optional name layout edit &rest params))
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
Candidates show the target and title next to the id."
  (let* ((rows (or (cairn--candidates workspace) (user-error "No pending proposals")))
         (table (mapcar (lambda (r) (cons (plist-get r :id) r)) rows))
         (completion-extra-properties
          (list :annotation-function
                (lambda (id)
                  (let ((r (cdr (assoc id table))))
                    (format "  %s  %s" (or (plist-get r :target) "") (or (plist-get r :title) "")))))))
    (completing-read (or prompt "cairn proposal: ") table nil t nil nil (caar table))))

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
      (setq header-line-format
            (substitute-command-keys
             (format "cairn: %s (%s)  \\<cairn-edit-keys>\\[cairn-edit-accept] accept the edited text, \\[cairn-edit-abort] abort"
                     (string-replace "%" "%%" (plist-get edit :path)) id)))
      (goto-char (point-min)))
    (save-current-buffer (select-window (display-buffer buf)))
    buf))

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
  (setq tabulated-list-format [("Job" 16 t) ("Kind" 10 t) ("State" 14 t) ("Tries" 5 t) ("Last error" 30 t)]
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
                                    (format "%s" (or (plist-get r :lastError) "")))))
                  rows))
    (tabulated-list-print t)))

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
  "Drop the job at point."
  (interactive)
  (cairn-jobs--act "cairn.discard"))

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
  "Keys of the plain cairn menu (when transient is not used).")

(defun cairn--transient-p ()
  "Non-nil if `cairn-dispatch' is to be a transient menu."
  (and cairn-use-transient (require 'transient nil t)))

(defun cairn--define-transient ()
  "Define the transient prefix `cairn-transient' (once transient is loaded).
Defined at run time so that the package neither needs nor loads
transient until the menu is first used."
  (unless (fboundp 'cairn-transient)
    (eval `(transient-define-prefix cairn-transient ()
             "The cairn menu."
             ["cairn"
              ,@(mapcar (lambda (c) (list (car c) (nth 1 c) (nth 2 c))) cairn-dispatch-commands)]
             ["Cockpit"
              :if-derived cairn-cockpit-mode
              ("a" "accept" cairn-cockpit-accept)
              ("r" "reject" cairn-cockpit-reject)
              ("e" "edit, then accept" cairn-cockpit-edit)
              ("m" "mark" cairn-cockpit-mark)
              ("u" "undo / unmark" cairn-cockpit-undo-or-unmark)
              ("U" "unmark all" cairn-cockpit-unmark-all)
              ("x" "execute marks" cairn-cockpit-execute)
              ("d" "diff" cairn-cockpit-diff)
              ("i" "info" cairn-cockpit-info)
              ("v" "choose a view" cairn-cockpit-choose-view)
              ("l" "previous view" cairn-cockpit-back)
              ("g" "refresh" revert-buffer)])
          t)))

;;;###autoload
(defun cairn-dispatch ()
  "The cairn menu: the cockpit's keys and the global commands.
A transient menu when transient is available and `cairn-use-transient'
is non-nil; otherwise a key help whose next key runs the command."
  (interactive)
  (if (cairn--transient-p)
      (progn (cairn--define-transient)
             (call-interactively 'cairn-transient))
    (with-help-window "*cairn keys*"
      (princ "cairn menu: press a key\n\n")
      (dolist (c cairn-dispatch-commands)
        (princ (format "  %-5s %s\n" (car c) (nth 1 c))))
      (when (derived-mode-p 'cairn-cockpit-mode)
        (princ "\ncairn cockpit keys\n\n")
        (dolist (k cairn-cockpit--keys)
          (princ (format "  %-5s %s\n" (car k) (cdr k))))))
    (set-transient-map cairn-dispatch-map)))

(provide 'cairn-menu)
;;; cairn-menu.el ends here
