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
;;
;; Checkdoc reads the source, not what `documentation' shows: a
;; docstring whose Lisp string writes \<MAP> or \[COMMAND] with one
;; backslash loses it, and the user reads "<MAP>[COMMAND]".  So the
;; files are also loaded and every docstring of a function or variable
;; they define is checked as `documentation' shows it: a keymap's name
;; in <...> or {...}, or a command's name in [...], left there is a
;; substitution that did not happen.

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

(defun cairn-lint--unsubstituted (doc)
  "The substitutions DOC, a docstring as `documentation' shows it, missed.
Each is the text left: <MAP> or {MAP} naming a keymap variable, [COMMAND]
naming a command."
  (let ((start 0) found)
    (while (string-match "\\([<{[]\\)\\([-a-zA-Z0-9/*+]+\\)\\([]>}]\\)" doc start)
      (let ((open (match-string 1 doc))
            (sym (intern-soft (match-string 2 doc)))
            (close (match-string 3 doc)))
        (when (and sym
                   (if (equal open "[")
                       (and (equal close "]") (commandp sym))
                     (and (equal close (if (equal open "<") ">" "}"))
                          (boundp sym) (keymapp (symbol-value sym)))))
          (push (match-string 0 doc) found)))
      (setq start (match-end 0)))
    (nreverse found)))

(defun cairn-lint--docstrings (files)
  "Docstring findings in FILES: substitutions that `documentation' did not make.
FILES are loaded, the main file first; each function and variable they
define is checked (see `cairn-lint--unsubstituted')."
  (require 'find-func)
  (dolist (file files) (load file nil t))
  (let ((truenames (mapcar #'file-truename files))
        found)
    (mapatoms
     (lambda (sym)
       (dolist (kind '(defun defvar))
         (let ((file (symbol-file sym kind)))
           (when (and file (member (file-truename file) truenames)
                      (if (eq kind 'defun) (fboundp sym) (boundp sym)))
             (let* ((doc (ignore-errors
                           (if (eq kind 'defun) (documentation sym)
                             (documentation-property sym 'variable-documentation))))
                    (left (and (stringp doc) (cairn-lint--unsubstituted doc))))
               (when left
                 (let* ((where (ignore-errors (find-function-search-for-symbol
                                               sym (and (eq kind 'defvar) 'defvar) file)))
                        (line (if (and where (cdr where))
                                  (with-current-buffer (car where) (line-number-at-pos (cdr where)))
                                0)))
                   (push (format "%s:%d: docstring of `%s' shows %s literally: write \\\\< \\\\[ \\\\{ in the Lisp string"
                                 (file-name-nondirectory file) line sym (string-join left " "))
                         found)))))))))
    (sort found #'string<)))

(defun cairn-lint-batch-and-exit ()
  "Lint the files left on the command line; the first is the main file."
  (let* ((files (mapcar #'expand-file-name command-line-args-left))
         (main-file (car files))
         (requires (cairn-lint--requires main-file))
         (text-quoting-style 'grave)
         (found (cl-loop for file in files
                         append (cairn-lint--checkdoc file)
                         append (cairn-lint--package-lint file main-file requires)))
         (found (append found (cairn-lint--docstrings files))))
    (setq command-line-args-left nil)
    (dolist (line found) (princ (concat line "\n")))
    (princ (format "cairn-lint: %d finding(s) in %d file(s)\n" (length found) (length files)))
    (kill-emacs (if found 1 0))))

(provide 'cairn-lint)
;;; cairn-lint.el ends here
