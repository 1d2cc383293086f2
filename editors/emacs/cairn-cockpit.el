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

;; M-x cairn-cockpit opens `*cairn: NAME*' (one per workspace), one
;; table with three views of a workspace: Candidates (pending
;; proposals), Memories (topic files) and History (decisions,
;; undoable); o shows the Overview, a page of foldable sections
;; (Pending by topic, Stale memories, Recently decided, Jobs needing
;; attention, Live sessions being followed).  Press ? there for the
;; keys and the global commands.
;; Everything goes through the cairn server (see cairn.el); the
;; cockpit refreshes itself when a decision, a job or a drain changes
;; the workspace (`cairn-workspace-changed-functions'), and while it
;; is visible it notices decisions made elsewhere (the CLI, another
;; editor) within `cairn-cockpit-poll-seconds'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tabulated-list)
(require 'cairn)

(declare-function cairn-dispatch "cairn-menu" ())
(declare-function cairn-edit-proposal "cairn-menu" (workspace id))

(defconst cairn-cockpit-views '("overview" "candidates" "memories" "history")
  "The cockpit's views, as the header lists them.
The overview is a page of sections (o shows it); TAB cycles the
tables, `cairn-cockpit--tables'.")

(defconst cairn-cockpit--tables '("candidates" "memories" "history")
  "The cockpit's table views, in TAB order.")

(defcustom cairn-cockpit-poll-seconds 5
  "While a cockpit is visible, check this often whether its workspace changed.
The check is one `cairn/status' request (the server compares a few
directory timestamps); the table is redrawn only when a count changed.
nil turns the check off (decisions and jobs of this Emacs still refresh)."
  :type '(choice (const :tag "Off" nil) number)
  :group 'cairn)

(defcustom cairn-cockpit-confirm-reject t
  "When non-nil, rejecting proposals in the cockpit asks first.
A rejection is remembered: later reviews do not propose the same
knowledge again."
  :type 'boolean
  :group 'cairn)

(defvar-local cairn-cockpit--workspace nil "Workspace shown in the cockpit.")
(defvar-local cairn-cockpit--view "candidates" "Current cockpit view.")
(defvar-local cairn-cockpit--back nil "Views l returns to, most recent first.")
(defvar-local cairn-cockpit--sorts nil "Alist (VIEW . SORT-KEY): the sort of each view.")
(defvar-local cairn-cockpit--marks nil "Ids of the marked proposals.")
(defvar-local cairn-cockpit--flags nil
  "The flagged rows, newest first: (ID CHAR VIEW ACTION) each.
CHAR is the tag shown (?A, ?R, ?U), VIEW the table view of the row
\(\"candidates\" or \"history\") and ACTION what x runs: \"accept\",
\"reject\", \"undo\" or \"unreject\".")
(defvar-local cairn-cockpit--status nil "Last `cairn/status' answer.")
(defvar-local cairn-cockpit--state "starting" "Connection / refresh state for the header line.")
(defvar-local cairn-cockpit--server-name "cairn" "Server name and version for the header line.")
(defvar-local cairn-cockpit--overview nil "Rows of the overview's last refresh.")
(defvar-local cairn-cockpit--folded nil "Keys of the overview's folded sections and groups.")
(defvar-local cairn-cockpit--expanded nil "Ids of the proposals whose diff the overview shows.")
(defvar-local cairn-cockpit--diffs nil
  "Alist (ID . DIFF) of the overview's fetched diffs.
DIFF is `loading' while asked, (error . MESSAGE) when refused.")
(defvar-local cairn-cockpit--follow nil "Non-nil: the details window follows point.")
(defvar-local cairn-cockpit--followed nil "The row the details window shows (follow mode).")

(defconst cairn-cockpit--section-of
  '(("pending" . "Pending") ("stale" . "Stale memories") ("decided" . "Recently decided")
    ("jobs" . "Jobs needing attention") ("sessions" . "Live sessions being followed")
    ("candidates" . "Pending") ("history" . "Recently decided") ("memories" . "Stale memories"))
  "The overview's section titles, by section (and by the table view of its rows).")

(defvar cairn-cockpit-mode-map
  ;; plain key strings: `kbd' would load edmacro, and with it kmacro's
  ;; global mouse binding, just by loading this file (Emacs 28)
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map "q" #'quit-window)
    (define-key map "l" #'cairn-cockpit-back)
    (define-key map "?" #'cairn-dispatch)
    (define-key map "h" #'cairn-dispatch)
    (define-key map "g" #'revert-buffer)
    (define-key map "\r" #'cairn-cockpit-act)
    (define-key map "i" #'cairn-cockpit-info)
    (define-key map "a" #'cairn-cockpit-flag-accept)
    (define-key map "r" #'cairn-cockpit-flag-reject)
    (define-key map "u" #'cairn-cockpit-flag-undo)
    (define-key map "m" #'cairn-cockpit-mark)
    (define-key map "U" #'cairn-cockpit-unmark-all)
    (define-key map "x" #'cairn-cockpit-execute)
    (define-key map "c" #'cairn-cockpit-flag-confirm)
    (define-key map "K" #'cairn-cockpit-accept-keeping-both)
    (define-key map "V" #'cairn-cockpit-verify)
    (define-key map "e" #'cairn-cockpit-edit)
    (define-key map "d" #'cairn-cockpit-diff)
    (define-key map "\t" #'cairn-cockpit-tab)
    (define-key map [backtab] #'cairn-cockpit-previous-view)
    (define-key map "v" #'cairn-cockpit-choose-view)
    (define-key map "D" #'cairn-drain-backlog)
    (define-key map "o" #'cairn-cockpit-overview)
    (define-key map "w" #'cairn-cockpit-evidence)
    (define-key map "F" #'cairn-cockpit-follow)
    (define-key map "\C-c\C-f" #'cairn-cockpit-follow)
    (define-key map [remap beginning-of-buffer] #'cairn-cockpit-first-row)
    (define-key map [remap tabulated-list-sort] #'cairn-cockpit-sort)
    map)
  "Keys of the cairn cockpit.")

(defconst cairn-cockpit--keys
  '(("RET" . "act on the row: details and diff / visit the memory file / show the decision")
    ("i" . "info panel for the row")
    ("a" . "flag A (accept): marked rows, else the region, else the row; History: an undone one, accepted again")
    ("r" . "flag R (reject): marked rows, else the region, else the row (u in History takes a rejection back); Memories: retire the topic")
    ("u" . "flag U (undo), History: an accept is undone, a rejection taken back; a, r, u again clear the flag")
    ("x" . "execute every flag after one confirmation (Accept 2, reject 1, undo 1?); no flags: the marked rows")
    ("e" . "edit the proposed text, then C-c C-c accepts the edited version; Memories: edit the topic file")
    ("c" . "flag C (confirm), Memories: the topic is still true, no longer due for revalidation")
    ("K" . "accept the row now, keeping both, where it is stale only because memory now says otherwise on its subject")
    ("V" . "verify: recheck what every topic cites; stale ones get update or retirement proposals")
    ("m" . "mark the proposal (Candidates) for a, r or x; m again unmarks it, U clears every mark and flag")
    ("d" . "show the diff in a diff-mode buffer (a / r work there too)")
    ("TAB" . "next table view; S-TAB previous; v choose a view; l back; Overview: fold the section, show the diff")
    ("o" . "the overview: Pending by topic, Stale memories, Recently decided, Jobs, Live sessions")
    ("w" . "why: the proposal's evidence, the journal's digest notes and their turns' text")
    ("F" . "follow mode: the details window shows the row at point (C-c C-f too)")
    ("D" . "drain the backlog now (progress in the mode line)")
    ("g" . "refresh (the sort and the row stay)")
    ("q" . "quit the cockpit window")
    ("?" . "the cairn menu: these keys and the global commands"))
  "Key help of the cockpit.")

(define-derived-mode cairn-cockpit-mode tabulated-list-mode "Cairn"
  "The cairn memory cockpit: Candidates, Memories and History of a workspace.
\\<cairn-cockpit-mode-map>\\[cairn-dispatch] shows the keys and the global commands.

\\{cairn-cockpit-mode-map}"
  (setq tabulated-list-use-header-line nil
        tabulated-list-padding 2)
  (setq-local revert-buffer-function #'cairn-cockpit--revert)
  (setq header-line-format '(:eval (cairn-cockpit--header)))
  (setq mode-line-process '(:eval (cairn-cockpit--mode-line)))
  (add-hook 'cairn-workspace-changed-functions #'cairn-cockpit-refresh-all)
  (add-hook 'window-size-change-functions #'cairn-cockpit--resized nil t)
  (cairn-cockpit--arm-poll))

(defun cairn-cockpit--resized (window)
  "Size the columns again for WINDOW's new width (no server request)."
  (with-current-buffer (window-buffer window)
    (let ((format (cairn-cockpit--format cairn-cockpit--view)))
      (when (and (equal cairn-cockpit--view "overview") cairn-cockpit--overview)
        (cairn-cockpit--redraw))
      (unless (or (null tabulated-list-entries) (equal format tabulated-list-format))
        (let ((place (cairn-cockpit--place))
              (view cairn-cockpit--view))
          (setq tabulated-list-format format
                tabulated-list-entries (cairn-cockpit--entries view (mapcar #'car tabulated-list-entries) format))
          (tabulated-list-init-header)
          (tabulated-list-print)
          (cairn-cockpit--tag-marks)
          (cairn-cockpit--goto-place place))))))

(defun cairn-cockpit-buffer-name (workspace)
  "The name of WORKSPACE's cockpit buffer: *cairn: NAME*."
  (format "*cairn: %s*" (file-name-nondirectory (directory-file-name workspace))))

(defun cairn-cockpit-buffer (workspace)
  "The live cockpit buffer showing WORKSPACE, or nil."
  (cl-find-if (lambda (buf)
                (with-current-buffer buf
                  (and (derived-mode-p 'cairn-cockpit-mode)
                       (equal cairn-cockpit--workspace workspace))))
              (buffer-list)))

;;;; Header

(defun cairn-cockpit--view-label (view)
  "VIEW capitalised."
  (capitalize view))

(defun cairn-cockpit--count-parts (st)
  "The header's counts of status ST, each (LONG SHORT RANK); zeros hidden.
The pending proposals and the mode come first.  SHORT is the text a
narrow window shows; RANK orders what a narrow header keeps (the
lower, the sooner; see `cairn-cockpit--header-split')."
  (if (or (null st) (null (plist-get st :refreshed)))
      (list (list "… proposals" "… proposals" 1))
    (let* ((n (plist-get st :proposals))
           (proposals (format "%d proposal%s" n (if (eql n 1) "" "s")))
           (mode (and (plist-get st :mode) (format "%s mode" (plist-get st :mode))))
           (others (delq nil
                         (mapcar (lambda (k)
                                   (let ((v (plist-get st (cdr k))))
                                     (and (integerp v) (> v 0) (format "%s %d" (car k) v))))
                                 '(("pending" . :pending) ("running" . :running)
                                   ("retry" . :retryWaiting) ("attention" . :attention)
                                   ("exhausted" . :exhausted) ("digests" . :digests)))))
           (others (and others (string-join others " ")))
           (u (plist-get st :unwiredAgents))
           (agents (and (integerp u) (> u 0) (if (eql u 1) "1 agent" (format "%d agents" u))))
           (usage (cairn-cockpit--usage st)))
      (delq nil
            (list (list proposals proposals 1)
                  (and mode (list mode mode 2))
                  (and (equal (plist-get st :provider) "extractive")
                       (list "embedded engine (cairn setup for better recall)"
                             "embedded engine (cairn setup)" 3))
                  (and others (list others others 6))
                  (and agents (list (concat agents " not reading the memory (cairn agents wire)")
                                    (concat agents " unwired (cairn agents wire)") 7))
                  (and usage (list usage usage 8)))))))

(defun cairn-cockpit--counts (st)
  "The header's counts of status ST: proposals and mode first, zeros hidden."
  (mapconcat #'car (cairn-cockpit--count-parts st) " · "))

(defun cairn-cockpit--usage (st)
  "Today's provider usage in status ST, for the header; nil when there was none.
Requests, tokens in and out (with ~ when some were estimated), and the
cost when the `prices' setting prices the models used."
  (let* ((u (plist-get st :usage))
         (requests (and (listp u) (plist-get u :requests))))
    (when (and (integerp requests) (> requests 0))
      (let ((cost (plist-get u :cost))
            (approx (if (and (integerp (plist-get u :estimated)) (> (plist-get u :estimated) 0)) "~" "")))
        (concat (format "today %d request%s %s%s→%s tokens" requests (if (eql requests 1) "" "s")
                        approx (cairn-cockpit--tokens (plist-get u :tokensIn))
                        (cairn-cockpit--tokens (plist-get u :tokensOut)))
                (if (numberp cost) (format " $%.2f" cost) ""))))))

(defun cairn-cockpit--tokens (n)
  "Token count N, short: 950, 12.3k, 4.1M."
  (let ((n (if (numberp n) n 0)))
    (cond ((< n 1000) (format "%d" n))
          ((< n 1000000) (format "%.1fk" (/ n 1000.0)))
          (t (format "%.1fM" (/ n 1000000.0))))))

(defun cairn-cockpit--state-text (st)
  "The state for the header, long and short: (LONG . SHORT), from status ST.
SHORT is what a narrow window shows: the error's code without its
reason, \"needs attention: ? j\" without the time of the last update."
  (let ((attention (cl-some (lambda (k) (and (integerp (plist-get st k)) (> (plist-get st k) 0)))
                            '(:attention :exhausted))))
    (cond ((cairn--spinner) (cons (concat "working " (cairn--spinner)) (concat "working " (cairn--spinner))))
          ((cdar cairn--progress)
           (let* ((p (cdar cairn--progress))
                  (text (format "draining%s" (if (nth 2 p) (format " %d%%" (nth 2 p)) ""))))
             (cons text text)))
          ((eq (plist-get st :draining) t) (cons "draining" "draining"))
          ((string-match "\\`error: \\(E_[A-Z_]+\\)" cairn-cockpit--state)
           (cons cairn-cockpit--state (concat "error: " (match-string 1 cairn-cockpit--state))))
          (attention (cons (concat cairn-cockpit--state ", needs attention: ? j for the jobs")
                           "needs attention: ? j"))
          (t (cons cairn-cockpit--state cairn-cockpit--state)))))

(defun cairn-cockpit--header-width ()
  "Columns of the window showing the cockpit (the one being drawn), else 80."
  (let ((win (if (eq (window-buffer) (current-buffer)) (selected-window)
               (get-buffer-window (current-buffer) t))))
    (if win (window-total-width win) 80)))

(defun cairn-cockpit--join (parts)
  "PARTS, each (TEXT . GROUP), as one line: · between counts, | between the others."
  (let (out prev)
    (dolist (p parts)
      (when out
        (push (if (and (eq prev 'counts) (eq (cdr p) 'counts)) " · " " | ") out))
      (push (car p) out)
      (setq prev (cdr p)))
    (apply #'concat (nreverse out))))

(defconst cairn-cockpit--essential-rank 3
  "Header parts of this rank or lower are the essential ones.
They are the pending count, the mode and the embedded-engine hint (see
`cairn-cockpit--count-parts'): a narrow header shows the other views
by their initials when in full they leave no room for these.")

(defun cairn-cockpit--header-split (&optional width)
  "The header for WIDTH columns and what does not fit it: (HEADER . REST).
The header starts with the views and the state, never cut.  When the
whole line is wider than WIDTH, the state shows in its short form, the
other views by their initials unless the essential parts still fit
\(see `cairn-cockpit--essential-rank'), and each of the other parts (the
marks, the flags, each count, today's usage, the server's identity)
stays in the header if it fits there, in its short form when only that
fits, most important first.  The others, after an error's reason, are
REST, in their short forms, for the mode line.  REST is nil when
everything fits."
  (let* ((width (or width (cairn-cockpit--header-width)))
         (st cairn-cockpit--status)
         (views (mapconcat (lambda (v) (if (equal v cairn-cockpit--view)
                                           (propertize (format "[%s]" (cairn-cockpit--view-label v)) 'face 'bold)
                                         (cairn-cockpit--view-label v)))
                           cairn-cockpit-views " "))
         (short-views (mapconcat (lambda (v) (if (equal v cairn-cockpit--view)
                                                 (propertize (format "[%s]" (cairn-cockpit--view-label v))
                                                             'face 'bold)
                                               (upcase (substring v 0 1))))
                                 cairn-cockpit-views " "))
         (state (cairn-cockpit--state-text st))
         ;; (LONG SHORT RANK GROUP), in the order the line shows them
         (parts (append
                 (and cairn-cockpit--marks
                      (let ((m (format "%d marked" (length cairn-cockpit--marks)))) (list (list m m 5 'marks))))
                 (and cairn-cockpit--flags
                      (let ((f (format "%d flagged (x)" (length cairn-cockpit--flags)))) (list (list f f 4 'marks))))
                 (mapcar (lambda (c) (append c '(counts))) (cairn-cockpit--count-parts st))
                 (let ((s (format "%s @ %s" cairn-cockpit--server-name
                                  (if cairn-cockpit--workspace
                                      (abbreviate-file-name cairn-cockpit--workspace) "?"))))
                   (list (list s s 9 'server)))))
         (full (concat " " views " | " (car state) " | "
                       (cairn-cockpit--join (mapcar (lambda (p) (cons (car p) (nth 3 p))) parts)))))
    (if (<= (string-width full) width)
        (cons full nil)
      (let* ((essential (apply #'+ (mapcar (lambda (p) (if (<= (nth 2 p) cairn-cockpit--essential-rank)
                                                           (+ 3 (string-width (nth 1 p))) 0))
                                           parts)))
             (head (concat " " (if (<= (+ 4 (string-width views) (string-width (cdr state)) essential) width)
                                   views short-views)
                           " | " (cdr state)))
             (room (- width (string-width head)))
             (by-rank (sort (copy-sequence parts) (lambda (a b) (< (nth 2 a) (nth 2 b)))))
             (reason (and (not (equal (car state) (cdr state)))
                          (string-trim (string-remove-prefix (cdr state) (car state)) "[:, ]+")))
             shown)
        ;; the parts that fit in short, most important first; then the long forms where room is left
        (dolist (p by-rank)
          (let ((w (+ 3 (string-width (nth 1 p)))))
            (when (<= w room)
              (push (cons p (nth 1 p)) shown)
              (setq room (- room w)))))
        (dolist (p by-rank)
          (let ((cell (assq p shown))
                (extra (- (string-width (car p)) (string-width (nth 1 p)))))
            (when (and cell (> extra 0) (<= extra room))
              (setcdr cell (car p))
              (setq room (- room extra)))))
        (let ((in (delq nil (mapcar (lambda (p) (let ((cell (assq p shown))) (and cell (cons (cdr cell) (nth 3 p)))))
                                    parts)))
              (out (append (and reason (not (string-empty-p reason)) (list (cons reason 'reason)))
                           (delq nil (mapcar (lambda (p) (and (not (assq p shown)) (cons (nth 1 p) (nth 3 p))))
                                             parts)))))
          (cons (if in (concat head " | " (cairn-cockpit--join in)) head)
                (and out (cairn-cockpit--join out))))))))

(defun cairn-cockpit--header ()
  "Header line: views and state first (never cut), then what fits of the rest.
Marks and flags, counts, today's usage and the server's identity follow
when the window is wide enough; otherwise they show in the mode line
\(`cairn-cockpit--mode-line')."
  (string-replace "%" "%%" (car (cairn-cockpit--header-split))))

(defun cairn-cockpit--mode-line ()
  "The mode line's part of the header: what a narrow window's header left out."
  (let ((rest (cdr (cairn-cockpit--header-split))))
    (if rest (string-replace "%" "%%" (concat " " rest)) "")))

;;;; Columns

(defun cairn-cockpit--width ()
  "Columns available for the table: the cockpit window's width, at least 60."
  (let ((win (get-buffer-window (current-buffer) t)))
    (max 60 (- (if win (window-body-width win) 80) tabulated-list-padding 1))))

;; At 80 columns the Candidates table is 12 + 5 + 2 columns of kind,
;; state and evidence, then the title (55 or more); the target topic
;; gets a column only when a row's title does not name it already and
;; the title keeps 55 columns.
(defconst cairn-cockpit--title-min 55
  "Columns the Candidates title gets at least, from 80-column windows on.")

(defun cairn-cockpit--format (view &optional rows)
  "Columns of VIEW for ROWS (default: the rows shown), sized from the window.
The title (or description) is the last column: it gets the rest of the
line and is never cut short by a column width.  The Target column is
there only when some row's title does not name its target (see
`cairn-cockpit--target-shown') and the window leaves room for it."
  (let* ((w (cairn-cockpit--width))
         (rows (or rows (mapcar #'car tabulated-list-entries)))
         (targets (delq nil (mapcar #'cairn-cockpit--target-shown rows)))
         (tw (min 24 (max 8 (apply #'max 0 (mapcar #'string-width targets))))))
    (pcase view
      ("candidates"
       (let ((fixed (+ 13 6 3)))
         (vconcat (list '("Kind" 12 t) '("State" 5 cairn-cockpit--state-less) '("Ev" 2 t :right-align t))
                  (and targets (>= (- w fixed tw 1) cairn-cockpit--title-min) (list (list "Target" tw t)))
                  (list (list "Title" 20 t)))))
      ("memories"
       (let ((rest (- w 10 5 6)))
         (vector (list "Name" (max 12 (/ rest 4)) t) '("Type" 9 t)
                 '("Age" 4 cairn-cockpit--age-less :right-align t) '("Fresh" 5 t)
                 (list "Description" 20 t))))
      (_
       (let ((fixed (+ 17 9 9 13)))
         (vconcat (list '("Decided" 16 t) '("Action" 8 t) '("State" 8 t) '("Kind" 12 t))
                  (and targets (>= (- w fixed tw 1) 30) (list (list "Target" tw t)))
                  (list (list "Title" 20 t))))))))

(defun cairn-cockpit--str (v)
  "V as a display string."
  (cond ((null v) "") ((stringp v) v) (t (format "%s" v))))

(defconst cairn-cockpit--time-fields '(:decided :created :updated :sealed :started :finished)
  "Row fields the info panel shows as local date-times when they are epoch seconds.")

(defun cairn-cockpit--time (v &optional seconds)
  "Display a time V (epoch seconds or a string) as a local date-time.
With SECONDS, down to the second."
  (cond ((numberp v) (format-time-string (if seconds "%Y-%m-%d %H:%M:%S" "%Y-%m-%d %H:%M") v))
        (t (cairn-cockpit--str v))))

(defun cairn-cockpit--target (row)
  "ROW's target without the memory folder every topic shares."
  (string-remove-prefix ".agents/memory/" (cairn-cockpit--str (plist-get row :target))))

(defun cairn-cockpit--slug (text)
  "TEXT as the server names a new topic's file: lower case words joined by -.
Letters fold as the server folds them: decomposed (NFKD), then only the
ASCII characters kept, so \"Für Übersetzungen\" is fur-ubersetzungen."
  (let ((ascii (replace-regexp-in-string
                "[^[:ascii:]]+" "" (ucs-normalize-NFKD-string (cairn-cockpit--str text)))))
    (string-trim (replace-regexp-in-string "[^a-z0-9]+" "-" (downcase ascii)) "-+" "-+")))

(defun cairn-cockpit--target-shown (row)
  "ROW's target topic file's short name; nil when ROW's title names it already.
A new topic's file is its title's slug (a -2 suffix when the name was
taken); an update, a merge or an instruction names its topic or file."
  (let* ((target (cairn-cockpit--str (plist-get row :target)))
         (file (file-name-nondirectory target))
         (stem (replace-regexp-in-string "-[0-9]+\\'" "" (cairn-cockpit--slug (file-name-sans-extension file))))
         (slug (cairn-cockpit--slug (cdr (cairn-cockpit--kind-title row)))))
    (unless (or (string-empty-p file)
                (string-empty-p stem)
                (string-prefix-p stem slug)
                (string-match-p (concat "\\(?:\\`\\|-\\)" (regexp-quote stem) "\\(?:-\\|\\'\\)") slug))
      file)))

(defun cairn-cockpit--kind-title (row)
  "ROW's kind and title, the kind saying what the title's prefix said.
\"New user memory: X\" of kind create shows as kind \"new user\", title \"X\"."
  (let ((kind (cairn-cockpit--str (plist-get row :kind)))
        (title (cairn-cockpit--str (plist-get row :title))))
    (if (string-match "\\`\\([A-Z][a-z]+\\) \\(?:\\([a-z]+\\) \\)?memory: " title)
        (cons (string-trim (format "%s %s" (downcase (match-string 1 title))
                                   (or (match-string 2 title) "")))
              (substring title (match-end 0)))
      (cons kind title))))

(defun cairn-cockpit--age (time)
  "How long ago TIME (epoch seconds) was: 5m, 3h, 2d, 7w."
  (let ((s (max 0 (- (float-time) (if (numberp time) time 0)))))
    (cond ((< s 3600) (format "%dm" (/ s 60)))
          ((< s 86400) (format "%dh" (/ s 3600)))
          ((< s (* 14 86400)) (format "%dd" (/ s 86400)))
          (t (format "%dw" (/ s (* 7 86400)))))))

(defun cairn-cockpit--candidate-state (row)
  "The State cell of candidate ROW: what is not plain pending, else its age.
\"stale\" (its files changed since it was made, or memory now says
otherwise on its subject: accepting is refused),
\"again\" (pending again after a rejection was taken back), or how long
ago it was proposed (every row of Candidates is pending)."
  (pcase (plist-get row :state)
    ("stale" (propertize "stale" 'face 'warning))
    ("pending" (if (plist-get row :decided) "again"
                 (propertize (cairn-cockpit--age (plist-get row :created)) 'face 'shadow)))
    (s (cairn-cockpit--str s))))

(defun cairn-cockpit--fresh (row)
  "The Fresh cell of memory ROW: stale, due or empty.
\"stale\": what it cites changed; \"due\": not confirmed for the
server's revalidation period."
  (cond ((eq (plist-get row :stale) t) (propertize "stale" 'face 'warning))
        ((eq (plist-get row :due) t) (propertize "due" 'face 'warning))
        (t "")))

(defun cairn-cockpit--age-less (a b)
  "Compare memory entries A and B by age: never confirmed first, then the oldest."
  (let ((x (plist-get (car a) :age)) (y (plist-get (car b) :age)))
    (cond ((not (integerp x)) (integerp y))
          ((not (integerp y)) nil)
          (t (> x y)))))

(defun cairn-cockpit--state-less (a b)
  "Compare entries A and B by State: stale first, then again, then the newest."
  (let ((rank (lambda (row) (cond ((equal (plist-get row :state) "stale") 0)
                                  ((plist-get row :decided) 1)
                                  (t 2)))))
    (let ((ra (funcall rank (car a))) (rb (funcall rank (car b))))
      (if (/= ra rb) (< ra rb)
        (> (or (plist-get (car a) :created) 0) (or (plist-get (car b) :created) 0))))))

(defun cairn-cockpit--title-cell (row title targets)
  "TITLE of ROW, led by its target file when TARGETS has no column for it."
  (let ((file (and (not targets) (cairn-cockpit--target-shown row))))
    (if file (concat file ": " title) title)))

(defun cairn-cockpit--columns (view row &optional format)
  "The column strings of ROW in VIEW, for the columns of FORMAT."
  (let* ((kt (cairn-cockpit--kind-title row))
         (format (or format tabulated-list-format))
         (targets (and (vectorp format) (cl-find "Target" format :key #'car :test #'equal)))
         (target (and targets (or (cairn-cockpit--target-shown row) ""))))
    (pcase view
      ("candidates"
       (vconcat (list (car kt) (cairn-cockpit--candidate-state row)
                      (let ((n (length (plist-get row :evidence)))) (if (> n 0) (format "%d" n) "-")))
                (and targets (list target))
                (list (cairn-cockpit--title-cell row (cdr kt) targets))))
      ("memories" (vector (cairn-cockpit--str (plist-get row :name)) (cairn-cockpit--str (plist-get row :type))
                          (let ((age (plist-get row :age))) (if (integerp age) (format "%dd" age) "-"))
                          (cairn-cockpit--fresh row)
                          (let ((why (plist-get row :why)))
                            (cond
                             ((plist-get row :error)  ; front matter the user broke: reported, never rewritten
                              (propertize (concat (cairn-cockpit--str (plist-get row :error))
                                                  ": front matter cannot be read; fix it by hand")
                                          'face 'warning))
                             ((and (eq (plist-get row :stale) t) why)
                                (concat (propertize (concat "stale: " (mapconcat #'cairn-cockpit--str why "; "))
                                                    'face 'warning)
                                        " | " (cairn-cockpit--str (plist-get row :description))))
                             (t (cairn-cockpit--str (plist-get row :description)))))))
      (_ (vconcat (list (cairn-cockpit--time (plist-get row :decided)) (cairn-cockpit--str (plist-get row :action))
                        (cairn-cockpit--str (plist-get row :state)) (car kt))
                  (and targets (list target))
                  (list (cairn-cockpit--title-cell row (cdr kt) targets)))))))

;;;; Cutting names to fit

(defun cairn-cockpit--head (text width)
  "The start of TEXT that fits in WIDTH columns, without trailing spaces."
  (string-trim-right (truncate-string-to-width text (max 0 width))))

(defun cairn-cockpit--tail (text width)
  "The end of TEXT that fits in WIDTH columns, without leading spaces."
  (let ((i (length text)) (w 0))
    (while (and (> i 0) (<= (+ w (char-width (aref text (1- i)))) width))
      (setq w (+ w (char-width (aref text (1- i))))
            i (1- i)))
    (string-trim-left (substring text i))))

(defun cairn-cockpit--common-prefix (a b)
  "How many characters strings A and B share at their start."
  (let ((n (compare-strings a nil nil b nil nil)))
    (if (eq n t) (length a) (1- (abs n)))))

(defun cairn-cockpit--cut (text width &optional from)
  "TEXT cut to WIDTH columns with … in the middle: its start and its end.
The start says what the text is and keeps the sort order readable;
the end is where names made from the same words differ (\"… the CLI
tool\", \"… the web app\") and where the server puts the -2 of a
name that was taken.  With FROM, the index of the character where
TEXT differs from another text the middle cut made alike, a short
start is followed by the text from the start of that character's
word on (with a second … when its end does not fit)."
  (cond
   ((<= (string-width text) width) text)
   ((< width 5) (truncate-string-to-width text width nil nil "…"))
   ((null from)
    (let ((head (cairn-cockpit--head text (- (1- width) (/ (1- width) 2)))))
      (concat head "…" (cairn-cockpit--tail text (- width 1 (string-width head))))))
   (t
    (let* ((head (cairn-cockpit--head text (max 1 (/ (1- width) 3))))
           (room (- width 1 (string-width head)))
           (tail (cairn-cockpit--tail text room)))
      (if (>= from (- (length text) (length tail)))
          (concat head "…" tail)
        ;; from the start of the word that differs, while the character that differs still shows
        (let ((start (max from (length head))))
          (while (and (> start (length head)) (< (- from start) (- room 3))
                      (string-match-p "[[:alnum:]]" (string (aref text (1- start)))))
            (setq start (1- start)))
          (concat head "…" (cairn-cockpit--head (substring text start) (1- room)) "…")))))))

(defun cairn-cockpit--cut-distinct (texts width)
  "Each of TEXTS cut to WIDTH columns, different texts kept apart.
Return an alist (TEXT . SHOWN).  A text that fits is shown as it is;
a longer one is cut in the middle (`cairn-cockpit--cut').  Texts the
middle cut leaves alike are cut again around where they differ."
  (let ((first (mapcar (lambda (text) (cons text (cairn-cockpit--cut text width)))
                       (delete-dups (copy-sequence texts)))))
    (mapcar (lambda (cell)
              (let ((alike (cl-loop for other in first
                                    when (and (not (eq other cell)) (equal (cdr other) (cdr cell)))
                                    collect (car other))))
                (if (null alike)
                    cell
                  (cons (car cell)
                        (cairn-cockpit--cut (car cell) width
                                            (apply #'max (mapcar (lambda (other)
                                                                   (cairn-cockpit--common-prefix (car cell) other))
                                                                 alike)))))))
            first)))

(defconst cairn-cockpit--cut-columns '("Name" "Target")
  "Columns whose cells are names: cut in the middle, kept apart, when too long.")

(defun cairn-cockpit--entries (view rows format)
  "The `tabulated-list-entries' of ROWS in VIEW for the columns of FORMAT.
A cell of a column in `cairn-cockpit--cut-columns' that its column
cannot hold is cut with `cairn-cockpit--cut-distinct', so that two
different names never look the same; its help text is the whole name."
  (let ((entries (mapcar (lambda (row) (list row (cairn-cockpit--columns view row format))) rows)))
    (dotimes (i (length format))
      (let ((column (aref format i)))
        (when (and (member (car column) cairn-cockpit--cut-columns) (< (1+ i) (length format)))
          (let ((cut (cairn-cockpit--cut-distinct (mapcar (lambda (e) (aref (cadr e) i)) entries)
                                                  (nth 1 column))))
            (dolist (e entries)
              (let* ((full (aref (cadr e) i))
                     (shown (cdr (assoc full cut))))
                (unless (equal shown full)
                  (aset (cadr e) i (propertize shown 'help-echo (format "%s: %s" (car column) full))))))))))
    entries))

;;;; Drawing

(defun cairn-cockpit--key (row)
  "What identifies ROW across refreshes: its id, or its file (Memories, sessions)."
  (or (plist-get row :id) (plist-get row :file) (plist-get row :path)))

(defun cairn-cockpit--place ()
  "Where point is: (KEY . INDEX), the row's key and its index among the rows.
In the overview: (overview LINE-KEY . LINE), its line's key and number."
  (if (equal cairn-cockpit--view "overview")
      (cairn-cockpit--overview-place)
    (cairn-cockpit--table-place)))

(defun cairn-cockpit--table-place ()
  "Where point is in a table: (KEY . INDEX), the row's key and its index."
  (let ((key (let ((row (tabulated-list-get-id))) (and row (cairn-cockpit--key row))))
        (index 0))
    (save-excursion
      (let ((here (line-beginning-position)))
        (goto-char (point-min))
        (while (< (point) here)
          (when (tabulated-list-get-id) (setq index (1+ index)))
          (forward-line 1))))
    (cons key index)))

(defun cairn-cockpit--goto-place (place)
  "Move to the row of PLACE's key, else to the row at its index.
Past the last row, to the last row.  In the overview, to PLACE's line
\(the first line when PLACE is not an overview place)."
  (cond ((eq (car-safe place) 'overview) (cairn-cockpit--overview-goto place))
        ((equal cairn-cockpit--view "overview") (goto-char (point-min)))
        (t (cairn-cockpit--table-goto place))))

(defun cairn-cockpit--table-goto (place)
  "Move to the table row of PLACE's key, else to the row at its index."
  (goto-char (point-min))
  (let ((index 0) found last)
    (while (and (not found) (not (eobp)))
      (let ((row (tabulated-list-get-id)))
        (when row
          (setq last (point))
          (when (or (and (car place) (equal (cairn-cockpit--key row) (car place)))
                    (and (null (car place)) (= index (cdr place))))
            (setq found (point)))
          (setq index (1+ index))))
      (forward-line 1))
    (unless found
      ;; the row went away (accepted, rejected): the one now at its index
      (goto-char (point-min))
      (setq index 0)
      (while (and (not found) (not (eobp)))
        (when (tabulated-list-get-id)
          (when (= index (cdr place)) (setq found (point)))
          (setq index (1+ index)))
        (forward-line 1)))
    (goto-char (or found last (point-min)))))

(defun cairn-cockpit--flag-of (row)
  "The flag of ROW, (ID CHAR VIEW ACTION), or nil.
In History only the row that can still be acted on (the proposal's
newest decision) carries it."
  (let ((flag (assoc (cairn-cockpit--key row) cairn-cockpit--flags))
        (view (cairn-cockpit--row-view row)))
    (and flag (equal (nth 2 flag) view)
         (or (not (equal view "history"))
             (cl-some (lambda (k) (eq (plist-get row k) t)) '(:canUndo :canUnreject :canAccept)))
         flag)))

(defun cairn-cockpit--tag-marks ()
  "Show each row's flag (A, R, U) or mark (*) in its first column."
  (save-excursion
    (goto-char (point-min))
    (while (not (eobp))
      (let* ((row (tabulated-list-get-id))
             (view (and row (cairn-cockpit--row-view row))))
        (when (member view '("candidates" "history" "memories"))
          (let ((flag (cairn-cockpit--flag-of row)))
            (tabulated-list-put-tag (cond (flag (propertize (string (nth 1 flag)) 'face
                                                            (if (memq (nth 1 flag) '(?A ?C)) 'success 'warning)))
                                          ((and (equal view "candidates")
                                                (member (plist-get row :id) cairn-cockpit--marks))
                                           "*")
                                          (t " "))))))
      (forward-line 1))))

(defun cairn-cockpit--revert (&rest _)
  "Fetch status and rows of the current view and redraw, point on its row."
  (let ((view cairn-cockpit--view)
        (place (cairn-cockpit--place))
        rows)
    (condition-case err
        (let* ((server (cairn-connect cairn-cockpit--workspace))
               (ws (cairn--workspace server)))
          (setq cairn-cockpit--workspace ws
                cairn-cockpit--server-name
                (let ((info (cairn--server-info server)))
                  (string-trim (format "%s %s" (or (plist-get info :name) "cairn")
                                       (or (plist-get info :version) ""))))
                cairn-cockpit--status (cairn--cache-status
                                       ws (cairn-request server :cairn/status (list :workspace ws)))
                rows (append (cairn-request server :cairn/cockpit (list :workspace ws :view view)) nil)
                cairn-cockpit--state (format-time-string "updated %H:%M:%S")))
      (error (setq cairn-cockpit--state (concat "error: " (cairn--error-message err)))))
    (setq cairn-cockpit--marks
          (cl-remove-if-not (lambda (id) (cl-some (lambda (r) (equal (plist-get r :id) id)) rows))
                            cairn-cockpit--marks))
    (cairn-cockpit--prune-flags view rows)
    (if (equal view "overview")
        (progn (setq cairn-cockpit--overview rows
                     cairn-cockpit--diffs nil
                     tabulated-list-entries nil)
               (cairn-cockpit--draw-overview))
      (cairn-cockpit--draw-table view rows))
    (cairn-cockpit--goto-place place)
    (let ((win (get-buffer-window (current-buffer) t)))
      (when win (set-window-point win (point))))
    (force-mode-line-update)))

(defun cairn-cockpit--draw-table (view rows)
  "Draw ROWS as the table of VIEW."
  (let ((format (cairn-cockpit--format view rows)))
    (setq tabulated-list-format format
          tabulated-list-entries (cairn-cockpit--entries view rows format)))
  (tabulated-list-init-header)
  (tabulated-list-print)
  (cairn-cockpit--tag-marks)
  (let ((inhibit-read-only t))
    (save-excursion
      (unless rows
        (goto-char (point-max))
        (insert (propertize (pcase view
                              ;; a refusal (E_STATE_FOREIGN …) lists nothing: say why, never "no proposals"
                              ((guard (string-prefix-p "error: " cairn-cockpit--state))
                               (format "  Nothing can be listed: %s\n  (docs/errors.md says what to do; g tries again)\n"
                                       (substring cairn-cockpit--state 7)))
                              ("candidates" "  No pending proposals.  D drains the backlog.\n")
                              ("memories" "  No memory topics yet.\n")
                              (_ "  No decisions yet.\n"))
                            'face 'shadow))))))

(defun cairn-cockpit-refresh-all (&optional workspace)
  "Refresh every cockpit buffer (showing WORKSPACE, when given)."
  (dolist (buf (buffer-list))
    (with-current-buffer buf
      (when (and (derived-mode-p 'cairn-cockpit-mode)
                 (or (null workspace) (equal workspace cairn-cockpit--workspace)))
        (revert-buffer)))))

;;;; Overview

(defconst cairn-cockpit--sections '("pending" "stale" "decided" "jobs" "sessions")
  "The overview's sections, top to bottom.")

(defconst cairn-cockpit--empty
  '(("pending" . "No pending proposals.  D drains the backlog.")
    ("stale" . "Nothing stale (cairn verify checks citations) or due for revalidation.")
    ("decided" . "No decisions yet.")
    ("jobs" . "No job needs you: nothing failed.")
    ("sessions" . "No agent's session file is followed now (see watch_paths)."))
  "What an empty section of the overview says.")

(defun cairn-cockpit-overview ()
  "Show the overview, a page of sections.
Pending proposals (by topic), Stale memories, Recently decided, Jobs
needing attention and Live sessions being followed.  TAB on a heading
folds its section; on a proposal it shows its diff."
  (interactive)
  (cairn-cockpit-switch-view "overview"))

(defun cairn-cockpit--clean (text)
  "TEXT on one line, control characters shown as spaces."
  (replace-regexp-in-string "[[:cntrl:]]" " " (cairn-cockpit--str text)))

(defun cairn-cockpit--fit (text width)
  "TEXT on one line, cut to WIDTH columns (… when cut)."
  (truncate-string-to-width (cairn-cockpit--clean text) (max 10 width) nil nil "…"))

(defun cairn-cockpit--section-rows (section)
  "The overview's rows of SECTION, in the server's order."
  (cl-remove-if-not (lambda (r) (equal (plist-get r :section) section)) cairn-cockpit--overview))

(defun cairn-cockpit--overview-text (section row)
  "The line of ROW in the overview's SECTION (without indentation)."
  (let ((kt (cairn-cockpit--kind-title row)))
    (pcase section
      ("pending" (format "%-12s %s" (car kt) (cdr kt)))
      ("stale"
       (let ((age (plist-get row :age))
             (why (append (plist-get row :why) nil)))
         (format "%s  %s" (string-remove-prefix ".agents/memory/" (cairn-cockpit--str (plist-get row :file)))
                 (concat (if (eq (plist-get row :stale) t)
                             (concat "stale: " (if why (mapconcat #'cairn-cockpit--str why "; ") "see cairn verify"))
                           "due for revalidation")
                         (if (integerp age) (format " (confirmed %d days ago)" age) " (never confirmed)")))))
      ("decided" (format "%s  %-8s %-10s %s" (cairn-cockpit--time (plist-get row :decided))
                         (cairn-cockpit--str (plist-get row :action)) (cairn-cockpit--str (plist-get row :state))
                         (cdr kt)))
      ("jobs" (let ((next (plist-get row :notBefore)))
                (format "%-10s %-13s %s%s%s" (cairn-cockpit--str (plist-get row :kind))
                        (cairn-cockpit--str (plist-get row :state))
                        (cairn-cockpit--str (or (plist-get row :lastError) "no error recorded"))
                        (if (plist-get row :waiting) (format " (%s)" (plist-get row :waiting)) "")
                        (if (numberp next) (format-time-string " next try %H:%M:%S" next)
                          " waits for you: ? j retries or discards"))))
      ("sessions" (format "%s  %7s  %s"
                          (if (numberp (plist-get row :modified))
                              (format-time-string "%Y-%m-%d %H:%M" (plist-get row :modified))
                            "")
                          (file-size-human-readable (or (plist-get row :size) 0))
                          (abbreviate-file-name (cairn-cockpit--str (plist-get row :path)))))
      (_ (cairn-cockpit--str (plist-get row :id))))))

(defun cairn-cockpit--line-key (section row)
  "The key of ROW's line in SECTION, to find it again after a redraw."
  (format "row:%s:%s" section (cairn-cockpit--key row)))

(defun cairn-cockpit--overview-place ()
  "Where point is in the overview: (overview LINE-KEY . LINE)."
  (cons 'overview (cons (get-text-property (point) 'cairn-cockpit-line) (line-number-at-pos))))

(defun cairn-cockpit--overview-goto (place)
  "Move to the line of overview PLACE's key, else to its line number."
  (let ((key (cadr place)) found)
    (goto-char (point-min))
    (when key
      (while (and (not found) (not (eobp)))
        (if (equal (get-text-property (point) 'cairn-cockpit-line) key)
            (setq found (point))
          (forward-line 1))))
    (unless found
      (goto-char (point-min))
      (forward-line (1- (cddr place)))
      (when (and (eobp) (not (bobp))) (forward-line -1)))))

(defun cairn-cockpit--heading (text count key section folded)
  "Insert a heading TEXT (COUNT) folding KEY, in SECTION; an ellipsis if FOLDED."
  (insert (propertize (concat (cairn-cockpit--fit text (- (cairn-cockpit--width) 8))
                              (format " (%d)" count) (if folded " …" "") "\n")
                      'face (if (equal key section) 'bold 'font-lock-function-name-face)
                      'cairn-cockpit-line (concat "fold:" key)
                      'cairn-cockpit-fold key
                      'cairn-cockpit-section section)))

(defun cairn-cockpit--insert-row (section row indent width)
  "Insert ROW of SECTION at INDENT within WIDTH, then its diff when expanded."
  (let* ((text (cairn-cockpit--fit (cairn-cockpit--overview-text section row) (- width indent)))
         (key (cairn-cockpit--line-key section row))
         (id (plist-get row :id)))
    (insert (propertize (concat "  " (make-string indent ?\s) text "\n")
                        'tabulated-list-id row 'tabulated-list-entry (vector text)
                        'cairn-cockpit-line key 'cairn-cockpit-section section))
    (when (and id (member section '("pending" "decided")) (member id cairn-cockpit--expanded))
      (cairn-cockpit--insert-diff id section key (+ indent 4)))))

(defun cairn-cockpit--diff-face (line)
  "The `diff-mode' face of diff LINE."
  (cond ((string-prefix-p "@@" line) 'diff-hunk-header)
        ((or (string-prefix-p "+++" line) (string-prefix-p "---" line)) 'diff-file-header)
        ((string-prefix-p "+" line) 'diff-added)
        ((string-prefix-p "-" line) 'diff-removed)
        (t 'diff-context)))

(defun cairn-cockpit--insert-diff (id section key indent)
  "Insert the diff of proposal ID below its row (KEY, in SECTION) at INDENT.
Not fetched yet: ask the server without waiting; the overview is
redrawn when it answers."
  (require 'diff-mode)
  (let ((diff (alist-get id cairn-cockpit--diffs nil nil #'equal)))
    (unless diff
      (cairn-cockpit--fetch-diff id)
      (setq diff 'loading))
    (dolist (line (cond ((eq diff 'loading) (list "loading the diff…"))
                        ((stringp diff) (split-string (string-trim-right diff) "\n"))
                        (t (list (format "the diff could not be read: %s (g tries again)" (cdr diff))))))
      (insert (propertize (concat (make-string indent ?\s) (cairn-cockpit--clean line) "\n")
                          'face (if (stringp diff) (cairn-cockpit--diff-face line) 'shadow)
                          'cairn-cockpit-diff id 'cairn-cockpit-line key 'cairn-cockpit-section section)))))

(defun cairn-cockpit--fetch-diff (id)
  "Ask the server for proposal ID's diff without waiting."
  (let ((buf (current-buffer))
        (server (cairn-server cairn-cockpit--workspace)))
    (setf (alist-get id cairn-cockpit--diffs nil nil #'equal) 'loading)
    (cl-flet ((arrived (diff)
                ;; redraw from a timer, never inside the process filter
                (cairn--run-soon
                 (lambda ()
                   (when (buffer-live-p buf)
                     (with-current-buffer buf
                       (when (eq (alist-get id cairn-cockpit--diffs nil nil #'equal) 'loading)
                         (setf (alist-get id cairn-cockpit--diffs nil nil #'equal) diff)
                         (when (equal cairn-cockpit--view "overview") (cairn-cockpit--redraw)))))))))
      (if (null server)
          (setf (alist-get id cairn-cockpit--diffs nil nil #'equal) (cons 'error "no server"))
        (jsonrpc-async-request
         server :cairn/proposal (list :workspace cairn-cockpit--workspace :id id)
         :success-fn (lambda (p) (arrived (cairn-cockpit--str (plist-get p :diff))))
         :error-fn (lambda (e) (arrived (cons 'error (cairn-cockpit--str (if (listp e) (plist-get e :message) e)))))
         :timeout-fn (lambda () (arrived (cons 'error "the server did not answer"))))))))

(defun cairn-cockpit--draw-overview ()
  "Draw the overview's sections from `cairn-cockpit--overview'."
  (let ((inhibit-read-only t)
        (width (cairn-cockpit--width)))
    (erase-buffer)
    (if (and (null cairn-cockpit--overview) (string-prefix-p "error: " cairn-cockpit--state))
        (insert (propertize (format "  Nothing can be listed: %s\n  (docs/errors.md says what to do; g tries again)\n"
                                    (substring cairn-cockpit--state 7))
                            'face 'shadow))
      (dolist (section cairn-cockpit--sections)
        (let ((rows (cairn-cockpit--section-rows section))
              (folded (member section cairn-cockpit--folded)))
          (cairn-cockpit--heading (cdr (assoc section cairn-cockpit--section-of)) (length rows)
                                  section section folded)
          (unless folded
            (cond
             ((null rows)
              (insert (propertize (format "    %s\n" (cdr (assoc section cairn-cockpit--empty)))
                                  'face 'shadow 'cairn-cockpit-section section
                                  'cairn-cockpit-line (concat "empty:" section))))
             ((equal section "pending")
              (let (groups)
                (dolist (row rows)
                  (let* ((group (cairn-cockpit--str (plist-get row :group)))
                         (cell (assoc group groups)))
                    (if cell (push row (cdr cell)) (push (list group row) groups))))
                (dolist (cell (nreverse groups))
                  (let ((key (concat "pending/" (car cell)))
                        (members (reverse (cdr cell))))
                    (cairn-cockpit--heading (concat "  " (string-remove-prefix ".agents/memory/" (car cell)))
                                            (length members) key section (member key cairn-cockpit--folded))
                    (unless (member key cairn-cockpit--folded)
                      (dolist (row members) (cairn-cockpit--insert-row section row 4 width)))))))
             (t (dolist (row rows) (cairn-cockpit--insert-row section row 2 width)))))
          (insert "\n"))))
    (cairn-cockpit--tag-marks)))

(defun cairn-cockpit--redraw (&optional key)
  "Draw the overview again from its last rows, point on its line (or KEY's)."
  (let ((place (cairn-cockpit--overview-place)))
    (when key (setcar (cdr place) key))
    (cairn-cockpit--draw-overview)
    (cairn-cockpit--overview-goto place)
    (dolist (win (get-buffer-window-list (current-buffer) nil t))
      (set-window-point win (point)))))

(defun cairn-cockpit-tab ()
  "In the overview, fold the section at point or show the proposal's diff.
In a table view, the next view."
  (interactive)
  (if (equal cairn-cockpit--view "overview")
      (cairn-cockpit-toggle)
    (call-interactively #'cairn-cockpit-next-view)))

(defun cairn-cockpit-toggle ()
  "Fold or unfold the overview's section at point; on a proposal, its diff.
On a heading, its section (or topic group); on a proposal of Pending
or Recently decided, the diff below it (asked without waiting); on any
other line, the section it belongs to."
  (interactive)
  (unless (equal cairn-cockpit--view "overview") (user-error "TAB folds sections in the overview (o)"))
  (let ((fold (get-text-property (point) 'cairn-cockpit-fold))
        (diff (get-text-property (point) 'cairn-cockpit-diff))
        (row (tabulated-list-get-id))
        (section (get-text-property (point) 'cairn-cockpit-section)))
    (cond
     (fold
      (setq cairn-cockpit--folded (if (member fold cairn-cockpit--folded)
                                      (delete fold cairn-cockpit--folded)
                                    (cons fold cairn-cockpit--folded)))
      (cairn-cockpit--redraw))
     ((or diff (and row (plist-get row :id) (member (plist-get row :section) '("pending" "decided"))))
      (let ((id (or diff (plist-get row :id))))
        (setq cairn-cockpit--expanded (if (member id cairn-cockpit--expanded)
                                          (delete id cairn-cockpit--expanded)
                                        (cons id cairn-cockpit--expanded)))
        (cairn-cockpit--redraw)))
     (section
      (push section cairn-cockpit--folded)
      (cairn-cockpit--redraw (concat "fold:" section)))
     (t (user-error "Nothing to fold here")))))

;;;; Follow mode

(defun cairn-cockpit-follow (&optional arg)
  "Toggle follow mode: show the row at point in the details window.
A proposal's details and diff (asked without waiting), a memory's
file, or the info panel of any other row.  With ARG, on if positive;
from Lisp, ARG nil turns it on."
  (interactive (list (if current-prefix-arg (prefix-numeric-value current-prefix-arg) 'toggle)))
  (setq cairn-cockpit--follow (if (eq arg 'toggle) (not cairn-cockpit--follow)
                                (> (prefix-numeric-value arg) 0))
        cairn-cockpit--followed nil)
  (if cairn-cockpit--follow
      (progn (add-hook 'post-command-hook #'cairn-cockpit--follow-point nil t)
             (cairn-cockpit--follow-point))
    (remove-hook 'post-command-hook #'cairn-cockpit--follow-point t))
  (setq mode-name (if cairn-cockpit--follow "Cairn Follow" "Cairn"))
  (force-mode-line-update)
  (message "cairn: follow mode %s" (if cairn-cockpit--follow "on: the details window shows the row at point (F turns it off)" "off")))

(defun cairn-cockpit--follow-point ()
  "Show the row at point in the details window, if it is not shown already."
  (when (and cairn-cockpit--follow (derived-mode-p 'cairn-cockpit-mode))
    (let* ((row (tabulated-list-get-id))
           (key (and row (list (plist-get row :section) (cairn-cockpit--key row)))))
      (when (and row (not (equal key cairn-cockpit--followed)))
        (setq cairn-cockpit--followed key)
        (condition-case err
            (cairn-cockpit--show-row row key)
          (error (message "cairn: %s" (cairn--error-message err))))))))

(defun cairn-cockpit--show-row (row key)
  "Show ROW (the followed KEY) in another window, leaving the cockpit selected."
  (pcase (cairn-cockpit--row-view row)
    ("memories"
     (display-buffer (find-file-noselect (cairn-cockpit--file row)) '(nil (inhibit-same-window . t))))
    ((or "candidates" "history")
     (let ((buf (current-buffer))
           (ws cairn-cockpit--workspace)
           (server (cairn-server cairn-cockpit--workspace)))
       (when server
         (jsonrpc-async-request
          server :cairn/proposal (list :workspace ws :id (plist-get row :id))
          :success-fn (lambda (p)
                        (cairn--run-soon
                         (lambda ()
                           (when (and (buffer-live-p buf)
                                      (equal (buffer-local-value 'cairn-cockpit--followed buf) key))
                             (save-selected-window (cairn--show-proposal p nil ws))))))
          :error-fn #'ignore :timeout-fn #'ignore))))
    (_ (save-selected-window (cairn-cockpit-info)))))

;;;; Evidence

(defun cairn-cockpit-evidence ()
  "Show the evidence of the proposal at point: its digests and what was said.
Each digest with its session and notes, then the user's and the
assistant's text of each turn it covers (see `cairn-cockpit-show-evidence')."
  (interactive)
  (let ((row (cairn-cockpit--row "candidates" "history")))
    (cairn-cockpit-show-evidence cairn-cockpit--workspace (plist-get row :id) (plist-get row :title)
                                 (plist-get row :evidence))))

(defun cairn-cockpit--text (text)
  "TEXT for a buffer: control characters other than newline and tab as spaces."
  (replace-regexp-in-string "[^[:print:]\n\t]" " " (cairn-cockpit--str text)))

(defun cairn-cockpit--indented (text)
  "TEXT cleaned, every line indented by four spaces."
  (replace-regexp-in-string "^" "    " (string-trim-right (cairn-cockpit--text text))))

(defun cairn-cockpit--insert-turn (turn)
  "Insert TURN of a `cairn/evidence' answer: its id, user's and assistant's text."
  (insert (format "\n** turn %s%s\n" (cairn-cockpit--clean (plist-get turn :id))
                  (if (stringp (plist-get turn :completedAt)) (format " (%s)" (plist-get turn :completedAt)) "")))
  (cond ((plist-get turn :missing)
         (insert (format "  not readable: %s (cleaned up after retention, or never captured)\n"
                         (cairn-cockpit--clean (plist-get turn :missing)))))
        ((eq (plist-get turn :oversized) t)
         (insert "  too large to keep when it was captured: its text is not stored\n"))
        (t (insert (propertize "  user:\n" 'face 'bold) (cairn-cockpit--indented (plist-get turn :user)) "\n"
                   (propertize "  assistant:\n" 'face 'bold) (cairn-cockpit--indented (plist-get turn :assistant))
                   "\n"))))

(defun cairn-cockpit-show-evidence (workspace id title evidence)
  "Show the evidence of proposal ID (TITLE) in WORKSPACE, citing digests EVIDENCE.
In the read-only `*cairn evidence*': each digest of the journal it
came from, with its session, its notes and the turns each note cites,
then the user's and the assistant's text of the digest's turns as they
were captured (redacted; long turns cut), asked from the server
\(`cairn/evidence').  The text is your own private evidence: it is shown
here and never written anywhere.  Return the buffer."
  (unless (append evidence nil)
    (user-error "%s cites no journal digest (a remembered text or an agent wiring proposes it)" id))
  (let ((answer (cairn-request (cairn-connect workspace) :cairn/evidence (list :workspace workspace :id id)))
        (buf (get-buffer-create "*cairn evidence*")))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "evidence of %s: %s\n" id (cairn-cockpit--clean (or (plist-get answer :title) title))))
        (dolist (d (append (plist-get answer :digests) nil))
          (if (plist-get d :missing)
              (insert (format "\ndigest   %s: not in the public journal (cairn journal lists it)\n"
                              (cairn-cockpit--clean (plist-get d :id))))
            (insert (format "\ndigest   %s\nsession  %s\ntrigger  %s\ncreated  %s\n"
                            (cairn-cockpit--clean (plist-get d :id)) (cairn-cockpit--clean (plist-get d :session))
                            (cairn-cockpit--str (plist-get d :trigger))
                            (format-time-string "%Y-%m-%d %H:%M:%S" (or (plist-get d :created) 0))))
            (dolist (note (append (plist-get d :notes) nil))
              (insert (format "\n* %s (%s)\n%s\n  turns: %s\n"
                              (cairn-cockpit--clean (plist-get note :title))
                              (cairn-cockpit--str (plist-get note :type))
                              (cairn-cockpit--text (plist-get note :body))
                              (mapconcat #'cairn-cockpit--clean (append (plist-get note :turnIds) nil) ", "))))
            (mapc #'cairn-cockpit--insert-turn (append (plist-get d :turns) nil))))
        (let ((more (plist-get answer :more)))
          (when (and (integerp more) (> more 0))
            (insert (format "\n… %d more turn%s not shown (cairn journal lists them)\n" more (if (= more 1) "" "s")))))
        (special-mode)
        (goto-char (point-min))))
    (pop-to-buffer buf)
    buf))

;;;; Noticing changes made elsewhere

(defvar cairn-cockpit--poll-timer nil "The timer of `cairn-cockpit-poll'.")

(defun cairn-cockpit--arm-poll ()
  "Start the poll timer, unless running already or polling is off."
  (when (and cairn-cockpit-poll-seconds (not (timerp cairn-cockpit--poll-timer)))
    (setq cairn-cockpit--poll-timer
          (run-with-timer cairn-cockpit-poll-seconds cairn-cockpit-poll-seconds #'cairn-cockpit-poll))))

(defconst cairn-cockpit--change-keys
  '(:pending :running :retryWaiting :attention :exhausted :digests :proposals :mode :draining :usage
    :unwiredAgents)
  "Status keys whose change redraws a cockpit.")

(defun cairn-cockpit--changed-p (old new)
  "Non-nil if status NEW differs from OLD in a count of the header."
  (or (null (plist-get old :refreshed))
      (cl-some (lambda (k) (not (equal (plist-get old k) (plist-get new k)))) cairn-cockpit--change-keys)))

(defun cairn-cockpit-poll ()
  "Redraw visible cockpits whose workspace changed (asks `cairn/status').
Decisions made with the CLI or another editor show this way.  Stops
the timer when no cockpit buffer is left."
  (let ((cockpits (cl-remove-if-not (lambda (b) (with-current-buffer b (derived-mode-p 'cairn-cockpit-mode)))
                                    (buffer-list))))
    (if (null cockpits)
        (when (timerp cairn-cockpit--poll-timer)
          (cancel-timer cairn-cockpit--poll-timer)
          (setq cairn-cockpit--poll-timer nil))
      (dolist (buf cockpits)
        (when (or (get-buffer-window buf t) noninteractive)
          (let* ((ws (buffer-local-value 'cairn-cockpit--workspace buf))
                 (server (and ws (cairn-server ws))))
            (when server
              (jsonrpc-async-request
               server :cairn/status (list :workspace ws)
               :success-fn (lambda (st)
                             (cairn--cache-status ws st)
                             ;; redraw from a timer: reverting makes requests,
                             ;; never from inside the process filter
                             (cairn--run-soon
                              (lambda ()
                                (when (buffer-live-p buf)
                                  (with-current-buffer buf
                                    (when (cairn-cockpit--changed-p cairn-cockpit--status st)
                                      (revert-buffer)))))))
               :error-fn #'ignore :timeout-fn #'ignore))))))))

;;;###autoload
(defun cairn-cockpit (&optional workspace view)
  "Open the memory cockpit `*cairn: NAME*' for WORKSPACE (default: this project).
VIEW is \"candidates\" (default), \"memories\", \"history\" or
\"overview\".  Outside any project it asks before starting a server;
with a prefix argument it asks for the workspace.  Return the buffer."
  (interactive (list (cairn-read-workspace current-prefix-arg)))
  (let* ((server (cairn-connect (or workspace default-directory)))
         (ws (cairn--workspace server))
         (buf (or (cairn-cockpit-buffer ws) (get-buffer-create (cairn-cockpit-buffer-name ws)))))
    (pop-to-buffer-same-window buf)
    (with-current-buffer buf
      (unless (derived-mode-p 'cairn-cockpit-mode) (cairn-cockpit-mode))
      (setq cairn-cockpit--workspace ws)
      (setq default-directory (file-name-as-directory ws))
      (if (and view (not (equal view cairn-cockpit--view)))
          (cairn-cockpit-switch-view view)
        (revert-buffer)))
    buf))

;;;; Rows and views

(defun cairn-cockpit--row-view (row)
  "The table view ROW belongs to; in the overview, the one of its section."
  (if (equal cairn-cockpit--view "overview")
      (pcase (plist-get row :section)
        ("pending" "candidates") ("decided" "history") ("stale" "memories") (s (or s "overview")))
    cairn-cockpit--view))

(defun cairn-cockpit--at-view ()
  "The table view of the row at point (the current view off any row)."
  (let ((row (tabulated-list-get-id)))
    (if row (cairn-cockpit--row-view row) cairn-cockpit--view)))

(defun cairn-cockpit--row (&rest views)
  "The row at point; error unless its view is one of VIEWS (any when nil).
In the overview a row's view is its section's: Pending rows are
candidates, Recently decided rows history, Stale memories memories."
  (let ((row (tabulated-list-get-id)))
    (when (and views (not (member (if row (cairn-cockpit--row-view row) cairn-cockpit--view) views)))
      (user-error (if (equal cairn-cockpit--view "overview")
                      "That key works on a row of %s"
                    "That key works in the %s view")
                  (mapconcat (lambda (v) (if (equal cairn-cockpit--view "overview")
                                             (cdr (assoc v cairn-cockpit--section-of))
                                           (capitalize v)))
                             views " or ")))
    (or row (user-error "No cockpit row here"))))

(defun cairn-cockpit-switch-view (view &optional no-history)
  "Show VIEW on its first row, sorted as it was when last shown.
Unless NO-HISTORY, l later goes back to the current view."
  (unless (member view cairn-cockpit-views) (user-error "Unknown cockpit view %s" view))
  (unless (equal view cairn-cockpit--view)
    (unless no-history
      (push cairn-cockpit--view cairn-cockpit--back)
      (when (nthcdr 10 cairn-cockpit--back) (setcdr (nthcdr 9 cairn-cockpit--back) nil)))
    (setf (alist-get cairn-cockpit--view cairn-cockpit--sorts nil nil #'equal) tabulated-list-sort-key)
    (setq tabulated-list-sort-key (alist-get view cairn-cockpit--sorts nil nil #'equal)))
  (setq cairn-cockpit--view view)
  (goto-char (point-min))
  (revert-buffer)
  (cairn-cockpit--goto-place (cons nil 0)))

(defun cairn-cockpit-next-view (&optional n)
  "Switch to the next table view (N views ahead).
From the overview, the first table (N > 0) or the last."
  (interactive "p")
  (let* ((n (or n 1))
         (i (or (cl-position cairn-cockpit--view cairn-cockpit--tables :test #'equal)
                (if (> n 0) -1 0))))
    (cairn-cockpit-switch-view (nth (mod (+ i n) (length cairn-cockpit--tables)) cairn-cockpit--tables))))

(defun cairn-cockpit-previous-view ()
  "Switch to the previous view."
  (interactive)
  (cairn-cockpit-next-view -1))

(defun cairn-cockpit-choose-view (view)
  "Switch to VIEW, chosen with completion."
  (interactive (list (completing-read "cairn view: " cairn-cockpit-views nil t)))
  (cairn-cockpit-switch-view view))

(defun cairn-cockpit-back ()
  "Return to the view shown before this one."
  (interactive)
  (if cairn-cockpit--back
      (cairn-cockpit-switch-view (pop cairn-cockpit--back) t)
    (user-error "No previous view (q quits)")))

(defun cairn-cockpit-first-row ()
  "Move to the first row (not the column header above it)."
  (interactive)
  (push-mark nil t)
  (cairn-cockpit--goto-place (cons nil 0)))

(defun cairn-cockpit-sort (&optional n)
  "Sort by the column at point, or by column N (a prefix argument).
Off any column (the margin, the header), sort by the first column."
  (interactive "P")
  (when (equal cairn-cockpit--view "overview")
    (user-error "The overview's sections keep their order (TAB folds one); S sorts a table view"))
  (tabulated-list-sort (cond (n (prefix-numeric-value n))
                             ((get-text-property (point) 'tabulated-list-column-name) nil)
                             (t 0))))

(defun cairn-cockpit-keys ()
  "Show the cockpit's keys."
  (interactive)
  (with-help-window "*cairn keys*"
    (princ "cairn cockpit keys\n\n")
    (dolist (k cairn-cockpit--keys)
      (princ (format "  %-5s %s\n" (car k) (cdr k))))))

;;;; Marks

(defun cairn-cockpit--selected ()
  "Proposal ids to act on: the marked ones, else the region's rows, else the row's."
  (unless (member cairn-cockpit--view '("candidates" "overview"))
    (user-error "That key works in the Candidates view"))
  (cond (cairn-cockpit--marks (reverse cairn-cockpit--marks))
        ((use-region-p)
         (let ((end (region-end)) ids)
           (save-excursion
             (goto-char (region-beginning))
             (while (< (point) end)
               (let ((row (tabulated-list-get-id)))
                 (when (and row (equal (cairn-cockpit--row-view row) "candidates"))
                   (cl-pushnew (plist-get row :id) ids :test #'equal)))
               (forward-line 1)))
           (deactivate-mark)
           (or (nreverse ids) (user-error "No proposal in the region"))))
        (t (list (plist-get (cairn-cockpit--row "candidates") :id)))))

(defun cairn-cockpit-mark ()
  "Mark the proposal at point (or those in the region) and move down.
On a marked row (no region), unmark it."
  (interactive)
  (let ((ids (if (use-region-p) (cairn-cockpit--selected)
               (list (plist-get (cairn-cockpit--row "candidates") :id)))))
    (cairn-cockpit--row "candidates")
    (if (and (null (cdr ids)) (member (car ids) cairn-cockpit--marks))
        (setq cairn-cockpit--marks (delete (car ids) cairn-cockpit--marks))
      (dolist (id ids) (cl-pushnew id cairn-cockpit--marks :test #'equal)))
    (cairn-cockpit--tag-marks)
    (when (= 1 (length ids)) (forward-line 1))))

(defun cairn-cockpit-unmark ()
  "Unmark the proposal at point and move down."
  (interactive)
  (let ((row (cairn-cockpit--row "candidates")))
    (setq cairn-cockpit--marks (delete (plist-get row :id) cairn-cockpit--marks))
    (cairn-cockpit--tag-marks)
    (forward-line 1)))

(defun cairn-cockpit-unmark-all ()
  "Remove every mark and every flag."
  (interactive)
  (setq cairn-cockpit--marks nil
        cairn-cockpit--flags nil)
  (cairn-cockpit--tag-marks)
  (force-mode-line-update))

;;;; Flags (dired-style: a, r, u flag; x executes)

(defun cairn-cockpit--prune-flags (view rows)
  "Drop the flags of VIEW's rows that ROWS (the rows just fetched) no longer hold.
The overview holds the rows of Candidates and (the newest) of History."
  (let ((views (if (equal view "overview") '("candidates" "history" "memories") (list view)))
        (present (mapcar (lambda (r)
                           (cons (if (equal view "overview")
                                     (pcase (plist-get r :section)
                                       ("pending" "candidates") ("decided" "history") ("stale" "memories"))
                                   view)
                                 (cairn-cockpit--key r)))
                         rows)))
    (setq cairn-cockpit--flags
          (cl-remove-if (lambda (f) (and (member (nth 2 f) views)
                                         (not (member (cons (nth 2 f) (car f)) present))))
                        cairn-cockpit--flags))))

(defun cairn-cockpit--flag (ids char view action &optional one)
  "Flag IDS with CHAR (their VIEW, ACTION run by x); ONE: the row at point.
A single row already flagged CHAR is cleared instead.  Flagged rows
lose their mark.  ONE moves point to the next line."
  (if (and (null (cdr ids)) (eq (nth 1 (assoc (car ids) cairn-cockpit--flags)) char))
      (setq cairn-cockpit--flags (cl-remove (car ids) cairn-cockpit--flags :key #'car :test #'equal))
    (dolist (id ids)
      (setq cairn-cockpit--flags (cons (list id char view action)
                                       (cl-remove id cairn-cockpit--flags :key #'car :test #'equal)))))
  (setq cairn-cockpit--marks (cl-set-difference cairn-cockpit--marks ids :test #'equal))
  (cairn-cockpit--tag-marks)
  (when one (forward-line 1))
  (force-mode-line-update))

(defun cairn-cockpit-flag-accept ()
  "Flag A (accept): the marked proposals, else those in the region, else the row.
In History (or Recently decided), an undone proposal, to be accepted
again (checked like any accept).  On a row flagged A, clear the flag.
\\<cairn-cockpit-mode-map>\\[cairn-cockpit-execute] executes the flags."
  (interactive)
  (if (equal (cairn-cockpit--at-view) "history")
      (cairn-cockpit--flag (list (cairn-cockpit--reaccept-id)) ?A "history" "accept" t)
    (let ((one (not (or cairn-cockpit--marks (use-region-p)))))
      (cairn-cockpit--flag (cairn-cockpit--selected) ?A "candidates" "accept" one))))

(defun cairn-cockpit-flag-reject ()
  "Flag R (reject): the marked proposals, else those in the region, else the row.
On a row flagged R, clear the flag.
\\<cairn-cockpit-mode-map>\\[cairn-cockpit-execute] executes the flags."
  (interactive)
  (if (equal (cairn-cockpit--at-view) "memories")
      (cairn-cockpit--flag (list (plist-get (cairn-cockpit--row "memories") :file)) ?R "memories" "retire" t)
    (let ((one (not (or cairn-cockpit--marks (use-region-p)))))
      (cairn-cockpit--flag (cairn-cockpit--selected) ?R "candidates" "reject" one))))

(defun cairn-cockpit-flag-confirm ()
  "Flag C (confirm) the memory topic at point: it is still true.
Executed (\\<cairn-cockpit-mode-map>\\[cairn-cockpit-execute]), its
confirmation date becomes today, so it is no longer due for
revalidation; the topic file is not rewritten.  A stale topic is
refused: update it (e visits it) or retire it (r).  On a row flagged C,
clear the flag."
  (interactive)
  (let ((row (cairn-cockpit--row "memories")))
    (when (eq (plist-get row :stale) t)
      (user-error "%s is stale (what it cites changed): e edits it, r then x retires it"
                  (cairn-cockpit--str (plist-get row :file))))
    (cairn-cockpit--flag (list (plist-get row :file)) ?C "memories" "confirm" t)))

(defun cairn-cockpit-verify ()
  "Recheck what every memory topic cites against the working tree, now.
Stale topics are marked (Memories, Stale memories) and get an update or
retirement proposal in Candidates; nothing is rewritten without one."
  (interactive)
  (cairn-cockpit--decide "cairn.verify" (list :workspace cairn-cockpit--workspace) nil nil
                         (lambda (result)
                           (let* ((r (plist-get result :result))
                                  (lines (plist-get r :staleInstructionLines)))
                             (format "verified %s topic(s): %s stale, %d proposal(s)%s%s"
                                     (plist-get r :checked) (plist-get r :stale)
                                     (length (plist-get r :proposals))
                                     (if (> (length (plist-get r :proposals)) 0) " (in Candidates)" "")
                                     (if (and (integerp lines) (> lines 0))
                                         (format "; %d stale line(s) in instruction files (marked in those files; cairn verify lists them)"
                                                 lines)
                                       ""))))))

(defun cairn-cockpit-flag-undo ()
  "Flag U (undo) the decision at point (History, Recently decided).
An applied proposal is to be undone (its files restored); a rejected
one un-rejected (pending again; later reviews may propose it again).
On a row flagged U, clear the flag.
\\<cairn-cockpit-mode-map>\\[cairn-cockpit-execute] executes the flags."
  (interactive)
  (let* ((row (cairn-cockpit--undoable-row))
         (action (if (eq (plist-get row :canUndo) t) "undo" "unreject")))
    (cairn-cockpit--flag (list (plist-get row :id)) ?U "history" action t)))

(defun cairn-cockpit--undoable-row ()
  "The History row at point, if its decision can be undone; else a `user-error'."
  (unless (equal (cairn-cockpit--at-view) "history")
    (user-error "u flags a decision for undo in History (TAB) or Recently decided (o); m unmarks a row, U every row"))
  (let ((row (cairn-cockpit--row "history")))
    (unless (or (eq (plist-get row :canUndo) t) (eq (plist-get row :canUnreject) t))
      (user-error "%s cannot be undone here: %s" (plist-get row :id)
                  (pcase (or (plist-get row :now) (plist-get row :state))
                    ("undone" "it is undone (a accepts it again)")
                    ("pending" "it is pending (in Candidates)")
                    ("stale" "it is stale")
                    (_ "only its newest decision can be undone"))))
    row))

(defun cairn-cockpit--flag-prompt (flags)
  "The confirmation of FLAGS: \"Accept 2, reject 1, undo 1? \"."
  (let ((parts (delq nil (mapcar (lambda (c)
                                   (let ((n (cl-count-if (lambda (f) (member (nth 3 f) (car c))) flags)))
                                     (and (> n 0) (format "%s %d" (cdr c) n))))
                                 '((("accept") . "accept") (("reject") . "reject") (("undo" "unreject") . "undo")
                                   (("retire") . "retire") (("confirm") . "confirm"))))))
    (concat (capitalize (substring (car parts) 0 1)) (substring (string-join parts ", ") 1) "? ")))

(defun cairn-cockpit-execute (&optional action)
  "Execute every flag (A accept, R reject, U undo) after one confirmation.
The confirmation counts them: \"Accept 2, reject 1, undo 1? \".  With no
flag, accept or reject the marked proposals (asked which).  From Lisp,
ACTION \"accept\" or \"reject\" runs that on the marked proposals."
  (interactive)
  (cond
   ((equal action "accept") (cairn-cockpit-accept))
   ((equal action "reject") (cairn-cockpit-reject))
   (cairn-cockpit--flags
    (let ((flags (reverse cairn-cockpit--flags)))
      (when (y-or-n-p (cairn-cockpit--flag-prompt flags))
        (setq cairn-cockpit--flags nil)
        (cairn-cockpit--tag-marks)
        (let ((ids (lambda (action) (mapcar #'car (cl-remove action flags :key #'cl-fourth :test-not #'equal)))))
          (when (funcall ids "accept") (cairn-cockpit--accept-ids (funcall ids "accept")))
          (when (funcall ids "reject") (cairn-cockpit--reject-ids (funcall ids "reject")))
          (when (funcall ids "unreject") (cairn-cockpit--unreject-ids (funcall ids "unreject")))
          (dolist (id (funcall ids "undo")) (cairn-cockpit--undo-id id))
          (dolist (file (funcall ids "retire")) (cairn-cockpit--topic "cairn.retireTopic" file))
          (dolist (file (funcall ids "confirm")) (cairn-cockpit--topic "cairn.confirmTopic" file))))))
   (cairn-cockpit--marks
    (if (eq ?a (car (read-multiple-choice
                     (format "%d marked proposal(s)" (length cairn-cockpit--marks))
                     '((?a "accept" "accept the marked proposals")
                       (?r "reject" "reject the marked proposals")))))
        (cairn-cockpit-accept)
      (cairn-cockpit-reject)))
   (t (user-error "Nothing flagged: a, r, u flag the row (m marks rows for a, r or x)"))))

;;;; Decisions

(defun cairn-cockpit--server ()
  "The cockpit's server (started if needed)."
  (cairn-connect cairn-cockpit--workspace))

(defun cairn-cockpit--decide (command argument done &optional then say)
  "Run COMMAND with ARGUMENT without blocking Emacs.
Once the server answers: message DONE (or what SAY makes of the
answer), call THEN in the cockpit; the cockpit refreshes.  An error
shows the server's reason."
  (let ((buf (current-buffer)))
    (cairn-command-async cairn-cockpit--workspace command argument
                         (lambda (result)
                           (message "cairn: %s" (if say (funcall say result) done))
                           (when (and then (buffer-live-p buf))
                             (with-current-buffer buf (funcall then)))))
    (force-mode-line-update)))

(defun cairn-cockpit--topic (command file)
  "Run COMMAND (retire or confirm) on memory topic FILE, without blocking."
  (cairn-cockpit--decide command (list :workspace cairn-cockpit--workspace :file file) nil nil
                         (lambda (result)
                           (let ((r (plist-get result :result)))
                             (if (equal command "cairn.retireTopic")
                                 (format "%s %s: retire %s (a then x in Candidates accepts it)"
                                         (if (eq (plist-get r :new) t) "proposed" "already proposed")
                                         (plist-get r :proposal) file)
                               (format "confirmed %s still true on %s" file (plist-get r :confirmed)))))))

(defun cairn-cockpit--ids-text (ids)
  "IDS for a message: the id, or how many."
  (if (cdr ids) (format "%d proposals" (length ids)) (car ids)))

(defun cairn-cockpit-accept (&optional keep-both)
  "Accept the marked proposals, else those in the region, else the one at point.
In History, accept the undone proposal at point again (checked like any accept).
With a prefix argument KEEP-BOTH, accept a proposal that is stale only because
memory now says otherwise on its subject: both statements are kept."
  (interactive "P")
  (cairn-cockpit--accept-ids (if (equal (cairn-cockpit--at-view) "history") (list (cairn-cockpit--reaccept-id))
                               (cairn-cockpit--selected))
                             keep-both))

(defun cairn-cockpit-accept-keeping-both ()
  "Accept the proposal at point (or the marked ones), keeping both statements.
Where it is stale only because memory now says otherwise on its subject, it is
applied all the same; its files are still checked."
  (interactive)
  (cairn-cockpit-accept t))

(defun cairn-cockpit--accept-ids (ids &optional keep-both)
  "Accept the proposals IDS now, without blocking.
KEEP-BOTH: see `cairn-cockpit-accept'."
  (cairn-cockpit--decide "cairn.accept" (append (list :workspace cairn-cockpit--workspace :ids (vconcat ids))
                                                (and keep-both (list :keepBoth t)))
                         (format "accepted %s (u then x in History undoes it)" (cairn-cockpit--ids-text ids))
                         (lambda () (cairn-cockpit--unmark ids))))

(defun cairn-cockpit--unmark (ids)
  "Unmark the proposals IDS."
  (setq cairn-cockpit--marks (cl-set-difference cairn-cockpit--marks ids :test #'equal))
  (cairn-cockpit--tag-marks)
  (force-mode-line-update))

(defun cairn-cockpit-reject ()
  "Reject the marked proposals, else those in the region, else the one at point.
Asks first when `cairn-cockpit-confirm-reject' is non-nil."
  (interactive)
  (let ((ids (cairn-cockpit--selected)))
    (when (or (not cairn-cockpit-confirm-reject)
              (y-or-n-p (format "Reject %s (later reviews will not propose %s again; u in History takes that back)? "
                                (cairn-cockpit--ids-text ids) (if (cdr ids) "them" "it"))))
      (cairn-cockpit--reject-ids ids))))

(defun cairn-cockpit--reject-ids (ids)
  "Reject the proposals IDS now, without blocking."
  (cairn-cockpit--decide "cairn.reject" (list :workspace cairn-cockpit--workspace :ids (vconcat ids))
                         (format "rejected %s" (cairn-cockpit--ids-text ids))
                         (lambda () (cairn-cockpit--unmark ids))))

(defun cairn-cockpit--undo-id (id)
  "Undo the applied proposal ID now (its files restored), without blocking."
  (cairn-cockpit--decide "cairn.undo" (list :workspace cairn-cockpit--workspace :id id)
                         (format "undid %s (a then x accepts it again)" id)))

(defun cairn-cockpit--unreject-ids (ids)
  "Take back the rejection of the proposals IDS now, without blocking."
  (cairn-cockpit--decide "cairn.unreject" (list :workspace cairn-cockpit--workspace :ids (vconcat ids))
                         (format "un-rejected %s: pending again in Candidates" (cairn-cockpit--ids-text ids))))

(defun cairn-cockpit--reaccept-id ()
  "The id of the undone proposal at point (History), else a `user-error'."
  (let ((row (cairn-cockpit--row "history")))
    (unless (eq (plist-get row :canAccept) t)
      (user-error "Only an undone proposal is accepted again here (%s is %s)"
                  (plist-get row :id) (or (plist-get row :now) (plist-get row :state))))
    (plist-get row :id)))

(defun cairn-cockpit-undo ()
  "Undo the decision at point (History) now, after confirmation.
An applied proposal is undone (its files restored); a rejected one is
un-rejected: pending again, and later reviews may propose it again.
In the cockpit, u flags the row instead and x executes the flags."
  (interactive)
  (let* ((row (cairn-cockpit--undoable-row))
         (id (plist-get row :id))
         (title (cdr (cairn-cockpit--kind-title row))))
    (if (eq (plist-get row :canUndo) t)
        (when (y-or-n-p (format "Undo %s (%s): restore its files? " id title))
          (cairn-cockpit--undo-id id))
      (when (y-or-n-p (format "Take back the rejection of %s (%s): pending again? " id title))
        (cairn-cockpit--unreject-ids (list id))))))

(defun cairn-cockpit-edit ()
  "Edit the proposed text of the proposal at point before accepting it.
On a memory topic (Memories, Stale memories): visit its file to update it."
  (interactive)
  (if (equal (cairn-cockpit--at-view) "memories")
      (find-file-other-window (cairn-cockpit--file (cairn-cockpit--row "memories")))
    (require 'cairn-menu)
    (cairn-edit-proposal cairn-cockpit--workspace (plist-get (cairn-cockpit--row "candidates") :id))))

;;;; Details

(defun cairn-cockpit--fetch (row)
  "The `cairn/proposal' details of ROW."
  (cairn--proposal (cairn-cockpit--server) cairn-cockpit--workspace (plist-get row :id)))

(defun cairn-cockpit-diff ()
  "Show the diff of the proposal at point in a `diff-mode' buffer and select it."
  (interactive)
  (let ((ws cairn-cockpit--workspace))
    (cairn--show-proposal (cairn-cockpit--fetch (cairn-cockpit--row "candidates" "history")) t ws)))

(defun cairn-cockpit--file (row)
  "Absolute file name of memory ROW."
  (let ((file (plist-get row :file)))
    (if (file-name-absolute-p file) file (expand-file-name file cairn-cockpit--workspace))))

(defun cairn-cockpit-act ()
  "Act on the row: proposal details and diff, or visit the memory file."
  (interactive)
  (let ((row (cairn-cockpit--row)))
    (pcase (cairn-cockpit--row-view row)
      ("memories" (find-file-other-window (cairn-cockpit--file row)))
      ((or "candidates" "history")
       (cairn--show-proposal (cairn-cockpit--fetch row) nil cairn-cockpit--workspace))
      (_ (cairn-cockpit-info)))))

(defun cairn-cockpit-info ()
  "Show every field of the row at point in an info panel."
  (interactive)
  (let ((row (cairn-cockpit--row))
        (view cairn-cockpit--view)
        (buf (get-buffer-create "*cairn info*")))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "cairn %s row\n\n" view))
        (cl-loop for (k v) on row by #'cddr
                 do (insert (format "%-12s %s\n" (substring (symbol-name k) 1)
                                    (cond ((vectorp v) (mapconcat #'cairn-cockpit--str (append v nil) ", "))
                                          ((memq k cairn-cockpit--time-fields) (cairn-cockpit--time v t))
                                          ((eq v :json-false) "no")
                                          ((eq v t) "yes")
                                          (t (cairn-cockpit--str v))))))
        (special-mode)
        (goto-char (point-min))))
    (display-buffer buf)
    buf))


(provide 'cairn-cockpit)
;;; cairn-cockpit.el ends here
