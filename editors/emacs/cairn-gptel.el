;;; cairn-gptel.el --- Feed gptel conversations to cairn  -*- lexical-binding: t; -*-

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

;; The gptel adapter of cairn.  `cairn-mode' loads this file once gptel
;; is loaded (and `cairn-gptel-integration' is non-nil) and calls
;; `cairn-gptel-setup'; turning the mode off calls
;; `cairn-gptel-teardown'.  Loading the file alone changes nothing.
;;
;; Each completed gptel response becomes a `cairn/turnCompleted'
;; notification.  Turn ids are content hashes chained through the
;; parent turn, so re-sending the same conversation is harmless; each
;; buffer is one session, ended by killing the buffer (`session-end')
;; or emptying it (`clear').  gptel itself is not required: this file
;; only reads its buffer text properties and prefix variables.

;;; Code:

(require 'subr-x)
(require 'cairn)

(defvar gptel-mode)
(defvar gptel-prompt-prefix-alist)
(defvar gptel-response-prefix-alist)
(defvar gptel-post-response-functions)

(defvar-local cairn-gptel--session-id nil "This buffer's conversation id, or nil before its first turn.")
(put 'cairn-gptel--session-id 'permanent-local t)
(defvar-local cairn-gptel--session-workspace nil "Workspace the buffer's turns were sent to.")
(put 'cairn-gptel--session-workspace 'permanent-local t)

(defun cairn-gptel--new-session-id ()
  "A fresh, unique session id."
  (concat "emacs-" (substring (secure-hash 'sha256 (format "%s %s %s %s" (emacs-pid) (float-time)
                                                          (random) (buffer-name)))
                              0 24)))

(defun cairn-gptel--response-p (pos)
  "Non-nil if POS is in text gptel inserted as a response."
  (let ((v (get-text-property pos 'gptel)))
    (and v (not (eq v 'ignore)))))

(defun cairn-gptel--strip-prefixes (text)
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
          (when (cairn-gptel--response-p pos)
            (let ((user (cairn-gptel--strip-prefixes (buffer-substring-no-properties user-start pos)))
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

(defun cairn-gptel--session ()
  "This buffer's session id, starting a session (and its hooks) if needed."
  (unless cairn-gptel--session-id
    (setq cairn-gptel--session-id (cairn-gptel--new-session-id)
          cairn-gptel--session-workspace (cairn--root))
    (add-hook 'kill-buffer-hook #'cairn-gptel--kill-buffer nil t)
    (add-hook 'after-change-functions #'cairn-gptel--after-change nil t))
  cairn-gptel--session-id)

(defun cairn-gptel-end-session (kind)
  "End this buffer's session with event KIND.
KIND is \"clear\", \"compaction\" or \"session-end\"."
  (when cairn-gptel--session-id
    (let ((sid cairn-gptel--session-id) (ws cairn-gptel--session-workspace))
      (setq cairn-gptel--session-id nil)
      (condition-case err
          (cairn-session-event ws sid kind)
        (error (message "cairn: session event not sent (%s)" (error-message-string err)))))))

(defun cairn-gptel--kill-buffer ()
  "Report the end of the buffer's session."
  (cairn-gptel-end-session "session-end"))

(defun cairn-gptel--after-change (_beg _end _len)
  "Report a clear when the conversation buffer was emptied."
  (when (and cairn-gptel--session-id (= (buffer-size) 0))
    (cairn-gptel-end-session "clear")))

(defun cairn-gptel-post-response (beg end)
  "Send the turn gptel just completed (response between BEG and END).
For `gptel-post-response-functions'; acts in `gptel-mode' buffers only
and never signals (a failing hook must not break gptel)."
  (when (and cairn-gptel-integration (< beg end) (bound-and-true-p gptel-mode))
    (condition-case err
        (let ((turn (cairn-gptel-turn-at end))
              (session (cairn-gptel--session))
              (ws cairn-gptel--session-workspace))
          (when turn
            (let ((send (lambda ()
                          (condition-case err
                              (apply #'cairn-turn-completed ws session turn)
                            (error (message "cairn: turn not sent (%s)" (error-message-string err)))))))
              ;; starting a server waits: never inside gptel's process filter
              (if (cairn-server ws) (funcall send) (run-at-time 0 nil send)))))
      (error (message "cairn: turn not sent (%s)" (error-message-string err))))))

(defun cairn-gptel--end-all-sessions ()
  "End every open conversation session (Emacs is exiting)."
  (dolist (buf (buffer-list))
    (with-current-buffer buf
      (when cairn-gptel--session-id (cairn-gptel-end-session "session-end")))))

(defun cairn-gptel-setup ()
  "Feed each completed gptel response to cairn.
Also end open sessions when Emacs exits.  `cairn-mode' calls this
once gptel is loaded."
  (add-hook 'gptel-post-response-functions #'cairn-gptel-post-response)
  (add-hook 'kill-emacs-hook #'cairn-gptel--end-all-sessions))

(defun cairn-gptel-teardown ()
  "Undo `cairn-gptel-setup' (called when `cairn-mode' is turned off)."
  (when (boundp 'gptel-post-response-functions)
    (remove-hook 'gptel-post-response-functions #'cairn-gptel-post-response))
  (remove-hook 'kill-emacs-hook #'cairn-gptel--end-all-sessions))

(provide 'cairn-gptel)
;;; cairn-gptel.el ends here
