;;; cairn-lint.el --- checkdoc and package-lint for the cairn package  -*- lexical-binding: t; -*-

;;; Commentary:

;; Lints the package's files with checkdoc and package-lint and exits
;; non-zero on any finding, each printed as FILE:LINE: MESSAGE:
;;
;;   emacs -Q --batch -L <package-lint and eglot dirs> -L editors/emacs \
;;     -l editors/emacs/test/cairn-lint.el -f cairn-lint-batch-and-exit \
;;     editors/emacs/cairn.el editors/emacs/cairn-cockpit.el ...
;;
;; cairn.el is the package's main file: the other files are linted
;; with `package-lint-main-file' pointing at it, as package.el treats
;; them.  Two adjustments keep the run offline and exact:
;;  - package-lint asks package.el's archive contents whether each
;;    dependency is installable; here a dependency counts as installable
;;    at the version required when its library is on the `load-path'.
;;  - package-lint 0.16 predates Emacs 28 and calls any (emacs "28.x")
;;    dependency uninstallable; that one message is dropped when the
;;    running Emacs satisfies the dependency.

;;; Code:

(require 'cl-lib)
(require 'checkdoc)
(require 'package)
(require 'package-lint)

(defconst cairn-lint--stale-emacs-message
  "This makes the package uninstallable in all released Emacs versions."
  "The package-lint message that is stale for Emacs versions released after it.")

(defun cairn-lint--requires (main-file)
  "The Package-Requires of MAIN-FILE, as a list of (NAME VERSION-STRING)."
  (with-temp-buffer
    (insert-file-contents main-file)
    (let ((header (lm-header "Package-Requires")))
      (and header (car (read-from-string header))))))

(defun cairn-lint--archive-contents (requires)
  "`package-archive-contents' offering each dependency of REQUIRES on the `load-path'."
  (cl-loop for (name version) in requires
           unless (eq name 'emacs)
           when (locate-library (symbol-name name))
           collect (list name (package-desc-create :name name :version (version-to-list version)
                                                   :kind 'single :archive "local"))))

(defun cairn-lint--checkdoc (file)
  "Checkdoc's findings in FILE, as strings."
  (let (found)
    (cl-letf (((symbol-function 'checkdoc-error)
               (lambda (point msg)
                 (push (format "%s:%d: checkdoc: %s" (file-name-nondirectory file)
                               (line-number-at-pos point) msg)
                       found))))
      (with-current-buffer (find-file-noselect file)
        (checkdoc-current-buffer t)))
    (nreverse found)))

(defun cairn-lint--package-lint (file main-file requires)
  "Package-lint's findings in FILE of the package whose main file is MAIN-FILE.
REQUIRES are MAIN-FILE's dependencies."
  (let ((package-lint-main-file (unless (equal file main-file) main-file))
        (package-archive-contents (cairn-lint--archive-contents requires))
        (emacs-ok (let ((need (cadr (assq 'emacs requires))))
                    (or (null need) (version<= need emacs-version)))))
    (with-temp-buffer
      (insert-file-contents file t)
      (emacs-lisp-mode)
      (cl-loop for (line col type message) in (package-lint-buffer)
               unless (and emacs-ok (equal message cairn-lint--stale-emacs-message))
               collect (format "%s:%d:%d: package-lint %s: %s"
                               (file-name-nondirectory file) line col type message)))))

(defun cairn-lint-batch-and-exit ()
  "Lint the files left on the command line; the first is the main file."
  (let* ((files (mapcar #'expand-file-name command-line-args-left))
         (main-file (car files))
         (requires (cairn-lint--requires main-file))
         (text-quoting-style 'grave)
         (found (cl-loop for file in files
                         append (cairn-lint--checkdoc file)
                         append (cairn-lint--package-lint file main-file requires))))
    (setq command-line-args-left nil)
    (dolist (line found) (princ (concat line "\n")))
    (princ (format "cairn-lint: %d finding(s) in %d file(s)\n" (length found) (length files)))
    (kill-emacs (if found 1 0))))

(provide 'cairn-lint)
;;; cairn-lint.el ends here
