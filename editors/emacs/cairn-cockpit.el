;;; cairn-cockpit.el --- The cairn memory cockpit  -*- lexical-binding: t; -*-

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

;; M-x cairn-cockpit opens `*cairn*', one table with three views of a
;; workspace: Candidates (pending proposals), Memories (topic files)
;; and History (decisions, undoable).  Press ? there for the keys.
;; Everything goes through the cairn server (see cairn.el); the
;; cockpit refreshes itself when a decision or a drain changes the
;; workspace (`cairn-workspace-changed-functions').

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tabulated-list)
(require 'cairn)

(defconst cairn-cockpit-views '("candidates" "memories" "history")
  "The cockpit's views, in TAB order.")

(defvar-local cairn-cockpit--workspace nil "Workspace shown in the cockpit.")
(defvar-local cairn-cockpit--view "candidates" "Current cockpit view.")
(defvar-local cairn-cockpit--back nil "Views to return to with q, most recent first.")
(defvar-local cairn-cockpit--status nil "Last `cairn/status' answer.")
(defvar-local cairn-cockpit--state "starting" "Connection / refresh state for the header line.")
(defvar-local cairn-cockpit--server-name "cairn" "Server name and version for the header line.")

(defvar cairn-cockpit-mode-map
  ;; plain key strings: `kbd' would load edmacro, and with it kmacro's
  ;; global mouse binding, just by loading this file (Emacs 28)
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map "q" #'cairn-cockpit-back)
    (define-key map "?" #'cairn-cockpit-keys)
    (define-key map "g" #'revert-buffer)
    (define-key map "\r" #'cairn-cockpit-act)
    (define-key map "i" #'cairn-cockpit-info)
    (define-key map "a" #'cairn-cockpit-accept)
    (define-key map "r" #'cairn-cockpit-reject)
    (define-key map "u" #'cairn-cockpit-undo)
    (define-key map "d" #'cairn-cockpit-diff)
    (define-key map "\t" #'cairn-cockpit-next-view)
    (define-key map [backtab] #'cairn-cockpit-previous-view)
    (define-key map "v" #'cairn-cockpit-choose-view)
    (define-key map "D" #'cairn-drain-backlog)
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
  (setq header-line-format '(:eval (cairn-cockpit--header)))
  (add-hook 'cairn-workspace-changed-functions #'cairn-cockpit-refresh-all))

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

(defun cairn-cockpit--str (v)
  "V as a display string."
  (cond ((null v) "") ((stringp v) v) (t (format "%s" v))))

(defun cairn-cockpit--time (v)
  "Display a decision time V (epoch seconds or a string)."
  (cond ((numberp v) (format-time-string "%Y-%m-%d %H:%M" v))
        (t (cairn-cockpit--str v))))

(defun cairn-cockpit--columns (view row)
  "The column strings of ROW in VIEW."
  (pcase view
    ("candidates" (vector (cairn-cockpit--str (plist-get row :state)) (cairn-cockpit--str (plist-get row :kind))
                          (cairn-cockpit--str (plist-get row :target)) (cairn-cockpit--str (plist-get row :title))
                          (format "%d" (length (plist-get row :evidence)))))
    ("memories" (vector (cairn-cockpit--str (plist-get row :name)) (cairn-cockpit--str (plist-get row :type))
                        (cairn-cockpit--str (plist-get row :description)) (cairn-cockpit--str (plist-get row :file))))
    (_ (vector (cairn-cockpit--time (plist-get row :decided)) (cairn-cockpit--str (plist-get row :state))
               (cairn-cockpit--str (plist-get row :kind)) (cairn-cockpit--str (plist-get row :target))
               (cairn-cockpit--str (plist-get row :title))
               (if (eq (plist-get row :canUndo) t) "yes" "")))))

(defun cairn-cockpit--revert (&rest _)
  "Fetch status and rows of the current view and redraw."
  (let ((view cairn-cockpit--view) rows)
    (condition-case err
        (let* ((server (cairn-connect cairn-cockpit--workspace))
               (ws (cairn--workspace server)))
          (setq cairn-cockpit--workspace ws
                cairn-cockpit--server-name
                (let ((info (cairn--server-info server)))
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
VIEW is \"candidates\" (default), \"memories\" or \"history\".  Return the buffer."
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
    (user-error "That key works in the %s view" (mapconcat #'capitalize views " or ")))
  (or (tabulated-list-get-id) (user-error "No cockpit row here")))

(defun cairn-cockpit-switch-view (view &optional no-history)
  "Show VIEW.
Unless NO-HISTORY, q later goes back to the current view."
  (unless (member view cairn-cockpit-views) (user-error "Unknown cockpit view %s" view))
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
      (user-error "Decision %s cannot be undone (%s)" (plist-get row :id) (plist-get row :state)))
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
                                    (cond ((vectorp v) (mapconcat #'cairn-cockpit--str (append v nil) ", "))
                                          ((eq k :decided) (cairn-cockpit--time v))
                                          ((eq v :json-false) "no")
                                          ((eq v t) "yes")
                                          (t (cairn-cockpit--str v))))))
        (special-mode)
        (goto-char (point-min))))
    (display-buffer buf)
    buf))


(provide 'cairn-cockpit)
;;; cairn-cockpit.el ends here
