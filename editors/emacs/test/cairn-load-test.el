;;; cairn-load-test.el --- Loading cairn changes nothing until cairn-mode  -*- lexical-binding: t; -*-

;;; Commentary:

;; Run in a fresh batch Emacs (this file does not load cairn itself):
;; loading cairn.el, cairn-cockpit.el and cairn-gptel.el must leave the
;; global state Emacs users care about untouched: eglot's server
;; programs and connect hook, timers, hooks, `auto-mode-alist' and the
;; global keymap.  `cairn-mode' installs its pieces; turning it off
;; removes every one of them again.  No server is started.
;;
;;   emacs -Q --batch -L <eglot dirs> -L editors/emacs \
;;     -l ert -l editors/emacs/test/cairn-load-test.el -f ert-run-tests-batch-and-exit

;;; Code:

(require 'ert)
;; The libraries cairn requires load first: what they do on load is
;; theirs (diff-mode, for one, adds its minor mode's keymap).
(require 'cl-lib)
(require 'subr-x)
(require 'eglot)
(require 'jsonrpc)
(require 'project)
(require 'diff-mode)
(require 'tabulated-list)

(defvar gptel-post-response-functions)
(defvar cairn-mode)
(defvar cairn--idle-timer)
(defvar cairn--server-program)
(declare-function cairn-mode "cairn")

(defconst cairn-load-test--dir
  (expand-file-name ".." (file-name-directory (or load-file-name buffer-file-name)))
  "The directory of the package's files.")

(defconst cairn-load-test--watched
  '(eglot-server-programs eglot-connect-hook eglot-server-initialized-hook
    eglot-managed-mode-hook timer-list timer-idle-list auto-mode-alist
    project-find-functions kill-emacs-hook after-load-functions
    after-load-alist minor-mode-map-alist emulation-mode-map-alists
    gptel-post-response-functions)
  "Global variables no cairn file may change on load.")

(defun cairn-load-test--snapshot ()
  "Copies of the watched variables and of the global keymap."
  (cons (cons 'global-map (copy-keymap global-map))
        (mapcar (lambda (var)
                  (cons var (and (boundp var) (copy-tree (symbol-value var) t))))
                cairn-load-test--watched)))

(defun cairn-load-test--changed (before)
  "Names of the watched variables (and keymap) that differ from BEFORE."
  (cl-loop for (name . value) in (cairn-load-test--snapshot)
           unless (equal value (alist-get name before))
           collect name))

(defun cairn-load-test--fake-gptel ()
  "A directory holding a minimal gptel.el, to load gptel without gptel."
  (let ((dir (make-temp-file "cairn-fake-gptel-" t)))
    (with-temp-file (expand-file-name "gptel.el" dir)
      (insert ";;; gptel.el --- stand-in  -*- lexical-binding: t; -*-\n"
              "(defvar gptel-post-response-functions nil)\n"
              "(provide 'gptel)\n"))
    dir))

(ert-deftest cairn-loading-changes-nothing-until-cairn-mode ()
  "Loading the four files changes no global state; `cairn-mode' adds and removes it."
  (should-not (featurep 'cairn))
  (let ((before (cairn-load-test--snapshot)))
    (dolist (file '("cairn.el" "cairn-cockpit.el" "cairn-menu.el" "cairn-gptel.el"))
      (load (expand-file-name file cairn-load-test--dir) nil t))
    (should (featurep 'cairn-cockpit))
    (should-not (featurep 'gptel))
    (should-not (cairn-load-test--changed before))
    (unwind-protect
        (progn
          (cairn-mode 1)
          (should (member cairn--server-program eglot-server-programs))
          (should (memq 'cairn--send-configuration eglot-connect-hook))
          (should (memq 'cairn--project-try project-find-functions))
          (should (rassq 'cairn-memory-mode auto-mode-alist))
          (should (memq cairn--idle-timer timer-idle-list))
          ;; gptel loads later: the adapter connects then
          (should-not (boundp 'gptel-post-response-functions))
          (let ((load-path (cons (cairn-load-test--fake-gptel) load-path)))
            (require 'gptel))
          (should (memq 'cairn-gptel-post-response gptel-post-response-functions))
          (should (memq 'cairn-gptel--end-all-sessions kill-emacs-hook))
          (cairn-mode -1)
          (should-not cairn--idle-timer)
          (should-not gptel-post-response-functions)
          (should-not (cairn-load-test--changed before))
          ;; with gptel already loaded, the mode connects the adapter at once
          (cairn-mode 1)
          (should (memq 'cairn-gptel-post-response gptel-post-response-functions))
          (cairn-mode -1)
          (should-not (cairn-load-test--changed before)))
      (when cairn-mode (cairn-mode -1)))))

(provide 'cairn-load-test)
;;; cairn-load-test.el ends here
