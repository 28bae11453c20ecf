-- OS pid → command line, where the database records it.
SELECT pid, command FROM rocpd_info_process WHERE command IS NOT NULL
