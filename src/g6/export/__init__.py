"""What leaves the home for other tools and people: ``warc`` and ``wacz`` archives, ``html_report`` pages."""
