"""kernelfuse's built-in plugins: one folder per idea from the papers.

Each subpackage registers its parts through the ``kernelfuse`` entry-point
group, exactly as a third-party plugin package does.
"""
