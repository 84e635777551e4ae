Feature: Login
  Registered shoppers sign in with their email address and password.

  Scenario Outline: A shopper logs in
    Given I open the login page
    When I log in as "<email>" with the password "secret"
    Then the page greets "<name>"

    Examples:
      | email           | name |
      | ann@example.com | ann  |
      | bob@example.com | bob  |

  Scenario: A wrong password is refused
    Given I open the login page
    When I log in as "ann@example.com" with the password "wrong"
    Then the page says "Invalid email or password"
