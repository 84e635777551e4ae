Feature: Real pages
  The shop's help, newsletter, deals, returns and invoices: frames, dialogs, tabs and files,
  and shoppers who come back logged in or on a phone.

  Scenario: The help page answers in a frame
    Given I open the help page
    Then the help frame says that returns are free for 30 days
    And the contact frame inside it gives the help address

  Scenario: Unsubscribing asks first
    Given I open the newsletter page
    When I unsubscribe and confirm
    Then the page says that I am unsubscribed

  Scenario: The deal of the day opens in a tab of its own
    Given I open the deals page
    Then the deal of the day is green tea at half price
    When I go back to the deals tab
    And I open the terms of sale in a new tab
    Then the terms say that returns are free for 30 days

  Scenario: A return comes with its receipt
    Given I open the returns page
    When I attach the receipt "receipt.pdf"
    Then the page says that receipt.pdf is attached

  Scenario: An invoice downloads as a file
    Given I open the invoices page
    Then invoice 1001 downloads as "invoice-1001.txt"

  @prettyplay.storage_state=features/files/ann.json
  Scenario: A returning customer starts logged in
    Given I open the shop
    Then the shop welcomes ann

  @prettyplay.device=iPhone_13
  Scenario: The shop on a phone
    Given I open the shop
    Then the page says that it is shown on a small screen
